# The image branch (the paper's Table 4): image models (`image_models:`) on the selected
# instances of the tasks that ship an image prompt, each image judged for one binary success
# by the main judge's client, cache and pacing (docs/images.md).


# An image model with `source: images` brings its images from its folder: a copy.
rule import_image:
    input:
        lambda w: STUDY.images[w.model][w.instance],
    output:
        f"{RUN}/image.png",
    log:
        f"{OUT}/logs/import_image/{{model}}/{{task}}/{{instance}}.log",
    wildcard_constraints:
        model=one_of(STUDY.images),
    localrule: True
    conda:
        "../envs/analysis.yaml"
    shell:
        "cp {input:q} {output:q} 2> {log:q}"


rule judge_image:
    input:
        images=image_task_runs,
        references=image_references,
    output:
        directory(f"{TASK}/judge_image"),  # <instance>/score.json
    log:
        f"{OUT}/logs/judge_image/{{model}}/{{task}}.log",
    wildcard_constraints:
        model=one_of(STUDY.image_models),
    localrule: True
    conda:
        "../envs/judge.yaml"
    resources:
        judge_api=1,
    params:
        judge=IMAGE_JUDGE_PARAMS,
        instances=image_instances,
    script:
        "../workflow_scripts/entry/judge_image.py"


rule image_tables:
    input:
        scores=[
            f"{OUT}/{model}/{task}/judge_image"
            for model in STUDY.image_models
            for task in IMAGE_TASKS
        ],
    output:
        success=report(
            f"{OUT}/tables/image_success.csv",
            caption="../report/image_success.rst",
            category="Tables",
        ),
        vs_paper=f"{OUT}/tables/image_vs_paper.csv",
        plot=report(
            f"{OUT}/plots/image_success.png",
            caption="../report/image_success.rst",
            category="Plots",
        ),
    log:
        f"{OUT}/logs/image_tables.log",
    localrule: True
    conda:
        "../envs/analysis.yaml"
    params:
        paper_rows=IMAGE_PAPER_ROWS,
        paper_table=config["benchmark"]["paper_image_table"],
    script:
        "../workflow_scripts/entry/image_tables.py"


rule image_all:
    input:
        IMAGE_RUNS,
        judge_targets(rules.image_tables.output if STUDY.image_models else []),
