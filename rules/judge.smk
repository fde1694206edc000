# The frames the VLM jobs of a (model, task) send, decoded and shrunk ahead: a CPU job
# (SLURM's CPU partition under the profile), so that the VLM jobs on the submit host only
# read them. Temporary: deleted once the task's judge and label jobs are done (a later
# rerun of either makes them again).
rule prepare_frames:
    input:
        videos=task_runs(f"{RUN}/video.mp4"),
        checkpoints=task_checkpoints,
    output:
        temp(directory(f"{TASK}/frames")),  # <instance>/<video stem>/NNNNN.jpg
    log:
        f"{OUT}/logs/prepare_frames/{{model}}/{{task}}.log",
    conda:
        "../envs/judge.yaml"
    params:
        protocol=FRAME_PARAMS,
        labels=label_frames,
    script:
        "../workflow_scripts/entry/prepare_frames.py"


rule judge:
    input:
        videos=task_runs(f"{RUN}/video.mp4"),
        images=task_images,
        frames=f"{TASK}/frames",
    output:
        directory(f"{TASK}/judge"),  # <instance>/{completeness,rubric,score}.json
    log:
        f"{OUT}/logs/judge/{{model}}/{{task}}.log",
    localrule: True
    conda:
        "../envs/judge.yaml"
    resources:
        judge_api=1,
    params:
        judge=JUDGE_PARAMS,
        instances=task_instances,
    script:
        "../workflow_scripts/entry/judge.py"


rule judge_all:
    input:
        per_task("judge"),


# A judge variant of `judges:` on the same videos, its documents by name (common.layout);
# a call the main judge or another variant already made comes from the shared cache.
rule judge_variant:
    input:
        videos=task_runs(f"{RUN}/video.mp4"),
        images=task_images,
    output:
        directory(str(judge_folder(OUT, "{model}", "{task}", "{judge}"))),
    log:
        f"{OUT}/logs/judge_variant/{{judge}}/{{model}}/{{task}}.log",
    wildcard_constraints:
        judge=one_of(VARIANTS),
    localrule: True
    conda:
        "../envs/judge.yaml"
    resources:
        judge_api=1,
    params:
        judge=lambda w: VARIANTS[w.judge],
        instances=task_instances,
    script:
        "../workflow_scripts/entry/judge.py"


rule judges_all:
    input:
        per_variant(),


rule judge_checkpoints:
    input:
        denoise=task_runs(f"{RUN}/denoise"),
        images=task_images,
    output:
        # <instance>/stepNN/{completeness,rubric,score}.json, <instance>/checkpoint_scores.json
        directory(f"{TASK}/judge_checkpoints"),
    log:
        f"{OUT}/logs/judge_checkpoints/{{model}}/{{task}}.log",
    wildcard_constraints:
        model=one_of(STUDY.pipelines),
    localrule: True
    conda:
        "../envs/judge.yaml"
    resources:
        judge_api=1,
    params:
        steps=CHECKPOINTS,
        judge=JUDGE_PARAMS,
        instances=task_instances,
    script:
        "../workflow_scripts/entry/judge_checkpoints.py"
