from workflow_scripts.judge.settings import instance_params, judge_params
from workflow_scripts.trajectory import checkpoint_steps

# What determines each VLM rule's answers, its prompt templates included (per rule: a
# template edit reruns only the rule whose calls read it).
try:
    JUDGE_PARAMS = judge_params(config["judge"])
    TRANSITION_PARAMS = judge_params(config["judge"], ["transition"])
    CHECKPOINTS = checkpoint_steps(config, STUDY)  # judged too: judge.checkpoints
except ValueError as err:  # StudyError included
    raise WorkflowError(str(err)) from None
# How the VLM entries call the judge (backend, the key's variable, endpoint, pacing) and
# where they cache its answers: never a reason to rerun, so not in the command (common.smk).
os.environ.update(
    VGI_JUDGE_CLIENT=json.dumps(config["judge"]), VGI_JUDGE_CACHE=f"{OUT}/cache/judge"
)
JUDGE_CLIENT = '--client "$VGI_JUDGE_CLIENT" --cache "$VGI_JUDGE_CACHE"'
JUDGE_INSTANCE = INSTANCES.apply(instance_params, axis=1).to_dict()
GT_IMAGE = INSTANCES["gt_image"].to_dict()


rule judge:
    input:
        video=f"{RUN}/video.mp4",
        image=instance_image,
        gt=lambda w: GT_IMAGE[w.instance] or [],
    output:
        passes=directory(f"{RUN}/judge"),  # completeness.json, rubric.json
        score=f"{RUN}/score.json",
    log:
        f"{OUT}/logs/judge/{{model}}/{{task}}/{{instance}}.log",
    localrule: True
    conda:
        "../envs/judge.yaml"
    resources:
        judge_api=1,
    params:
        judge=JUDGE_PARAMS,
        instance=lambda w: JUDGE_INSTANCE[w.instance],
    shell:
        f"{ENTRY}/judge.py {JUDGE_CLIENT} "
        "--video {input.video:q} --image {input.image:q} --gt={input.gt:q} "
        "--judge {params.judge:q} --instance {params.instance:q} "
        "--passes {output.passes:q} --score {output.score:q} > {log:q} 2>&1"


rule judge_all:
    input:
        per_instance(f"{RUN}/score.json"),


rule judge_checkpoints:
    input:
        denoise=f"{RUN}/denoise",
        image=instance_image,
        gt=lambda w: GT_IMAGE[w.instance] or [],
    output:
        passes=directory(f"{RUN}/judge_checkpoints"),  # stepNN/{completeness,rubric,score}.json
        scores=f"{RUN}/checkpoint_scores.json",
    log:
        f"{OUT}/logs/judge_checkpoints/{{model}}/{{task}}/{{instance}}.log",
    wildcard_constraints:
        model=one_of(STUDY.generated),
    localrule: True
    conda:
        "../envs/judge.yaml"
    resources:
        judge_api=1,
    params:
        steps=json.dumps(CHECKPOINTS),
        judge=JUDGE_PARAMS,
        instance=lambda w: JUDGE_INSTANCE[w.instance],
    shell:
        f"{ENTRY}/judge_checkpoints.py {JUDGE_CLIENT} "
        "--denoise {input.denoise:q} --steps {params.steps:q} --image {input.image:q} "
        "--gt={input.gt:q} --judge {params.judge:q} --instance {params.instance:q} "
        "--passes {output.passes:q} --scores {output.scores:q} > {log:q} 2>&1"
