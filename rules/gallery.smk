rule contact_sheet:
    input:
        videos=model_runs(f"{RUN}/video.mp4"),
        checkpoints=generated_runs(f"{RUN}/denoise"),
    output:
        sheets=report(
            directory(f"{OUT}/gallery/{{model}}/sheets"),
            patterns=["{instance}.png"],
            caption="../report/contact_sheet.rst",
            category="Gallery",
            subcategory="{model}",
            labels={"model": "{model}", "instance": "{instance}"},
        ),
        thumbs=directory(f"{OUT}/gallery/{{model}}/thumbs"),
    log:
        f"{OUT}/logs/contact_sheet/{{model}}.log",
    conda:
        "../envs/analysis.yaml"
    params:
        columns=6,
        tile_width=160,
    script:
        "../workflow_scripts/entry/contact_sheet.py"


rule gallery:
    input:
        sheets=expand(f"{OUT}/gallery/{{model}}/sheets", model=STUDY.models),
        thumbs=expand(f"{OUT}/gallery/{{model}}/thumbs", model=STUDY.models),
        videos=per_instance(f"{RUN}/video.mp4"),
        images=INSTANCES["image"].tolist(),
        scores=judge_targets(rules.judge_all.input),
        transitions=judge_targets(rules.transitions_all.input),
        generated_images=IMAGE_RUNS,  # the image branch's, beside the same instances
        image_scores=judge_targets(rules.image_tables.input.scores),
    output:
        index=f"{OUT}/gallery/index.html",
        pages=[  # a model made elsewhere: the tasks its folder holds videos of
            f"{OUT}/gallery/{model}/{task}.html"
            for model in STUDY.models
            for task in RUN_TASKS[model]
        ],
    log:
        f"{OUT}/logs/gallery.log",
    localrule: True
    conda:
        "../envs/analysis.yaml"
    params:
        tasks=INSTANCES[["level", "prompt", "goal", "checklist"]].to_dict("index"),
        judge_off=judge_off(),
    script:
        "../workflow_scripts/entry/gallery.py"


rule export_official:
    input:
        videos=model_runs(f"{RUN}/video.mp4"),
    output:
        directory(f"{OUT}/eval_res/{{model}}"),
    log:
        f"{OUT}/logs/export_official/{{model}}.log",
    localrule: True
    conda:
        "../envs/analysis.yaml"
    script:
        "../workflow_scripts/entry/export_official.py"


rule export_official_all:
    input:
        expand(rules.export_official.output, model=STUDY.models),
