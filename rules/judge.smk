from workflow_scripts.judge.settings import instance_params, judge_params

JUDGE_PARAMS = judge_params(config["judge"])
JUDGE_INSTANCE = INSTANCES.apply(instance_params, axis=1).to_dict()
GT_IMAGE = INSTANCES["gt_image"].to_dict()


rule judge:
    input:
        video=f"{RUN}/video.mp4",
        image=lambda w: IMAGE[w.instance],
        gt=lambda w: GT_IMAGE[w.instance] or [],
    output:
        completeness=f"{RUN}/judge/completeness.json",
        rubric=f"{RUN}/judge/rubric.json",
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
    script:
        "../workflow_scripts/entry/judge.py"


rule judge_all:
    input:
        per_instance(f"{RUN}/score.json"),
