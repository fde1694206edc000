rule select_instances:
    output:
        f"{OUT}/instances/selected.csv",
    log:
        f"{OUT}/logs/select_instances.log",
    localrule: True
    conda:
        "../envs/analysis.yaml"
    params:
        ids=INSTANCES.index.tolist(),
        subset=config["benchmark"]["subset"],
        seed=config["benchmark"]["subset_seed"],
    script:
        "../workflow_scripts/entry/select_instances.py"


rule generate:
    input:
        image=instance_image,
    output:
        video=f"{RUN}/video.mp4",
        checkpoints=directory(f"{RUN}/denoise"),
        meta=f"{RUN}/generation.json",
    log:
        f"{OUT}/logs/generate/{{model}}/{{task}}/{{instance}}.log",
    wildcard_constraints:
        model=one_of(SINGLE_RUNS),
    conda:
        "../envs/inference.yaml"
    threads: model_resource("threads", 1)
    resources:
        gpu=model_resource("gpu", 1),
        mem_mb=model_resource("mem_mb", 16000),
        runtime=model_resource("runtime", 60),
    params:
        settings=lambda w: GENERATION_PARAMS[w.model],
        prompt=instance_prompt,
    shell:
        '"$VGI_PYTHON" "$VGI_GENERATE" --registry "$VGI_REGISTRY" '
        "--model {wildcards.model} --settings {params.settings:q} --threads {threads} "
        "--image {input.image:q} --prompt {params.prompt:q} --video {output.video:q} "
        "> {log:q} 2>&1"


# A model with `resources.batch` over 1: a job per batch of its instances (common.smk's
# BATCHES), its weights loaded once; the same outputs per instance as `generate`'s. A batch
# runs again whole (Snakemake removes all its outputs first): each finished instance kept
# under its resume state's key is restored, not made again (vgi_models.resume.keep). It
# goes where the profile sends `generate` (its set-resources).
for name, (key, members) in BATCHES.items():
    member_runs = [
        RUN.format(model=key, task=task, instance=instance)
        for task, instance in members
    ]
    member_images = [IMAGE[RUNS[key][1]][instance] for _, instance in members]
    spec = STUDY.models[RUNS[key][0]]

    rule:
        name:
            name
        input:
            image=member_images,
        output:
            video=[f"{run}/video.mp4" for run in member_runs],
            checkpoints=[directory(f"{run}/denoise") for run in member_runs],
            meta=[f"{run}/generation.json" for run in member_runs],
        log:
            f"{OUT}/logs/generate/{key}/{name}.log",
        conda:
            "../envs/inference.yaml"
        threads: spec.resources.get("threads", 1)
        resources:
            gpu=spec.resources.get("gpu", 1),
            mem_mb=lambda w, attempt, spec=spec: job_resource(
                spec, "mem_mb", 16000, attempt
            ),
            runtime=lambda w, attempt, spec=spec, n=len(members): job_resource(
                spec, "runtime", 60, attempt, videos=n
            ),
        params:
            run=key,
            settings=GENERATION_PARAMS[key],
            prompt=[PROMPT[RUNS[key][1]][instance] for _, instance in members],
        shell:
            '"$VGI_PYTHON" "$VGI_GENERATE" --registry "$VGI_REGISTRY" --batch '
            "--model {params.run} --settings {params.settings:q} --threads {threads} "
            "--image {input.image:q} --prompt {params.prompt:q} --video {output.video:q} "
            "> {log:q} 2>&1"

    # where the profile sends `generate` (its set-resources: the partition, the signal)
    getattr(rules, name).rule.resources.update(
        workflow.resource_settings.overwrite_resources.get("generate", {})
    )


# A video API model (`source: api`) makes the same target through its provider's SDK: no
# GPU, capped by `video_api` (the profile), the operation kept outside the outputs so that
# no rerun pays twice (docs/commercial-models.md).
rule generate_api:
    input:
        image=instance_image,
    output:
        video=f"{RUN}/video.mp4",
        meta=f"{RUN}/generation.json",
    log:
        f"{OUT}/logs/generate_api/{{model}}/{{task}}/{{instance}}.log",
    wildcard_constraints:
        model=one_of(API_RUNS),
    conda:
        "../envs/judge.yaml"
    resources:
        video_api=1,
        mem_mb=model_resource("mem_mb", 1000),
        runtime=model_resource("runtime", 60),
    params:
        settings=lambda w: GENERATION_PARAMS[w.model],
        prompt=instance_prompt,
    script:
        "../workflow_scripts/entry/generate_api.py"


# A model with `source: static` is a shortcut baseline: a video made from the input image
# (held still, under growing noise, panned, or another instance's: workflow_scripts/
# held_image.py) by a local job, judged like any model.
rule hold_image:
    input:
        image=shortcut_image,
    output:
        video=f"{RUN}/video.mp4",
        meta=f"{RUN}/generation.json",
    log:
        f"{OUT}/logs/hold_image/{{model}}/{{task}}/{{instance}}.log",
    wildcard_constraints:
        model=one_of(STATIC_RUNS),
    localrule: True
    conda:
        "../envs/analysis.yaml"
    params:
        settings=lambda w: GENERATION_PARAMS[w.model],
        prompt=instance_prompt,
    script:
        "../workflow_scripts/entry/hold_image.py"


# A model with `source: videos` brings its videos from its folder: a copy, no GPU job.
rule import_video:
    input:
        lambda w: STUDY.videos[w.model][w.instance],
    output:
        f"{RUN}/video.mp4",
    log:
        f"{OUT}/logs/import_video/{{model}}/{{task}}/{{instance}}.log",
    wildcard_constraints:
        model=one_of(STUDY.videos),
    localrule: True
    conda:
        "../envs/analysis.yaml"
    shell:
        "cp {input:q} {output:q} 2> {log:q}"


rule generate_all:
    input:
        per_instance(f"{RUN}/video.mp4", main_only=False),
