rule judge:
    input:
        sheet=rules.instance_sheet.output.sheet,
        videos=task_runs(f"{RUN}/video.mp4"),
        images=task_images,
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
    shell:
        "{PYTHON:q} {ENTRY:q}/judge.py --client {JUDGE_CLIENT:q} --cache {JUDGE_CACHE:q} "
        "--sheet {input.sheet:q} --judge {params.judge:q} --out {output:q} "
        "--inputs {input.videos:q} > {log:q} 2>&1"


rule judge_all:
    input:
        per_task("judge"),


rule judge_checkpoints:
    input:
        sheet=rules.instance_sheet.output.sheet,
        denoise=task_runs(f"{RUN}/denoise"),
        images=task_images,
    output:
        # <instance>/stepNN/{completeness,rubric,score}.json, <instance>/checkpoint_scores.json
        directory(f"{TASK}/judge_checkpoints"),
    log:
        f"{OUT}/logs/judge_checkpoints/{{model}}/{{task}}.log",
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
    shell:
        "{PYTHON:q} {ENTRY:q}/judge_checkpoints.py --client {JUDGE_CLIENT:q} "
        "--cache {JUDGE_CACHE:q} --sheet {input.sheet:q} --steps {params.steps:q} "
        "--judge {params.judge:q} --out {output:q} --inputs {input.denoise:q} "
        "> {log:q} 2>&1"
