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


# An image pipeline (`output: image`, a local diffusers family) makes the image on a GPU,
# through a shell entry as rule `generate` does (common.smk: GENERATE_ENV).
rule generate_image:
    input:
        image=image_input,
    output:
        image=f"{RUN}/image.png",
        meta=f"{RUN}/generation.json",
    log:
        f"{OUT}/logs/generate_image/{{model}}/{{task}}/{{instance}}.log",
    wildcard_constraints:
        model=one_of(IMAGE_PIPELINES),
    conda:
        "../envs/inference.yaml"
    threads: image_model_resource("threads", 1)
    resources:
        gpu=image_model_resource("gpu", 1),
        mem_mb=image_model_resource("mem_mb", 16000),
        runtime=image_model_resource("runtime", 30),
    params:
        settings=lambda w: IMAGE_GENERATION_PARAMS[w.model],
        prompt=image_prompt,
    shell:
        '"$VGI_PYTHON" "$VGI_GENERATE_IMAGE" --registry "$VGI_REGISTRY" '
        "--model {wildcards.model} --settings {params.settings:q} --threads {threads} "
        "--image {input.image:q} --prompt {params.prompt:q} --output {output.image:q} "
        "> {log:q} 2>&1"


# An image API model (`source: api`, `output: image`) asks its provider's SDK, on the submit
# host (one request, no GPU); a reply is kept by the digest of its inputs before the job
# ends, so no rerun pays twice.
rule generate_image_api:
    input:
        image=image_input,
    output:
        image=f"{RUN}/image.png",
        meta=f"{RUN}/generation.json",
    log:
        f"{OUT}/logs/generate_image_api/{{model}}/{{task}}/{{instance}}.log",
    wildcard_constraints:
        model=one_of(IMAGE_APIS),
    localrule: True
    conda:
        "../envs/judge.yaml"
    resources:
        image_api=1,
        mem_mb=image_model_resource("mem_mb", 1000),
        runtime=image_model_resource("runtime", 30),
    params:
        settings=lambda w: IMAGE_GENERATION_PARAMS[w.model],
        prompt=image_prompt,
    script:
        "../workflow_scripts/entry/generate_image_api.py"


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
            for task in IMAGE_MODEL_TASKS[model]
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
        levels=IMAGE_INSTANCES["level"].to_dict(),
        coverage=IMAGE_COVERAGE,
        judge_model=config["judge"]["model"],
    script:
        "../workflow_scripts/entry/image_tables.py"


rule image_all:
    input:
        IMAGE_RUNS,
        judge_targets(rules.image_tables.output if STUDY.image_models else []),
