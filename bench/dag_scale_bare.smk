# A bare Snakefile with the job shape of the project's study (no project code): one
# `generate` per (model, instance), three directory rules per (model, task), per-model and
# global aggregates. Its instance sheet (instances.json) and model settings (models.json)
# are written by bench/dag_scale.py.
import json

with open("bare/instances.json") as f:
    SHEET = json.load(f)  # instance -> {task, image, prompt, goal, checklist}
with open("bare/models.json") as f:
    MODELS = json.load(f)  # model -> {settings, threads, gpu, mem_mb, runtime}
OUT = "bare/results"
TASKS = {}
for instance, row in SHEET.items():
    TASKS.setdefault(row["task"], []).append(instance)
RUN = OUT + "/{model}/{task}/{instance}"
TASK = OUT + "/{model}/{task}"
TABLES = [f"{OUT}/tables/table{i}.csv" for i in range(7)]


wildcard_constraints:
    model="|".join(MODELS),
    task="[a-z0-9_]+",
    instance="[^/]+_lv[0-9]+_[^/]+",


def task_runs(pattern):
    return lambda w: [
        pattern.format(model=w.model, task=w.task, instance=i) for i in TASKS[w.task]
    ]


def task_images(w):
    return [SHEET[i]["image"] for i in TASKS[w.task]]


def task_instances(w):
    return {i: SHEET[i] for i in TASKS[w.task]}


def every(pattern, models=MODELS):
    return [
        pattern.format(model=m, task=row["task"], instance=i)
        for m in models
        for i, row in SHEET.items()
    ]


def per_task(stage):
    return [f"{OUT}/{m}/{t}/{stage}" for m in MODELS for t in TASKS]


rule all:
    input:
        f"{OUT}/instances/selected.csv",
        every(RUN + "/video.mp4"),
        f"{OUT}/plots/a.png",
        f"{OUT}/gallery/index.html",
        expand(f"{OUT}/eval_res/{{model}}", model=MODELS),


rule select_instances:
    output:
        f"{OUT}/instances/selected.csv",
    log:
        f"{OUT}/logs/select_instances.log",
    localrule: True
    conda:
        "env.yaml"
    params:
        ids=list(SHEET),
    script:
        "job.py"


rule generate:
    input:
        image=lambda w: SHEET[w.instance]["image"],
    output:
        video=RUN + "/video.mp4",
        checkpoints=directory(RUN + "/denoise"),
        meta=RUN + "/generation.json",
    log:
        f"{OUT}/logs/generate/{{model}}/{{task}}/{{instance}}.log",
    conda:
        "env.yaml"
    threads: lambda w: MODELS[w.model]["threads"]
    resources:
        gpu=lambda w: MODELS[w.model]["gpu"],
        mem_mb=lambda w: MODELS[w.model]["mem_mb"],
        runtime=lambda w: MODELS[w.model]["runtime"],
    params:
        settings=lambda w: MODELS[w.model]["settings"],
        prompt=lambda w: SHEET[w.instance]["prompt"],
    shell:
        "generate --model {wildcards.model} --settings {params.settings:q} "
        "--image {input.image:q} --prompt {params.prompt:q} --video {output.video:q} "
        "> {log:q} 2>&1"


rule prepare_frames:
    input:
        videos=task_runs(RUN + "/video.mp4"),
        checkpoints=task_runs(RUN + "/denoise"),
    output:
        temp(directory(TASK + "/frames")),
    log:
        f"{OUT}/logs/prepare_frames/{{model}}/{{task}}.log",
    conda:
        "env.yaml"
    params:
        protocol='{"fps": 2}',
        labels=lambda w: '{"steps": [1, 2, 40]}',
    script:
        "job.py"


rule judge:
    input:
        videos=task_runs(RUN + "/video.mp4"),
        images=task_images,
        frames=TASK + "/frames",
    output:
        directory(TASK + "/judge"),
    log:
        f"{OUT}/logs/judge/{{model}}/{{task}}.log",
    localrule: True
    conda:
        "env.yaml"
    resources:
        judge_api=1,
    params:
        judge='{"model": "vlm"}',
        instances=task_instances,
    script:
        "job.py"


rule label_transitions:
    input:
        denoise=task_runs(RUN + "/denoise"),
        images=task_images,
        frames=TASK + "/frames",
    output:
        directory(TASK + "/transitions"),
    log:
        f"{OUT}/logs/label_transitions/{{model}}/{{task}}.log",
    localrule: True
    conda:
        "env.yaml"
    resources:
        judge_api=1,
    params:
        transitions='{"pairs": [[1, 2]]}',
        judge='{"model": "vlm"}',
        instances=task_instances,
        human=lambda w: "{}",
    script:
        "job.py"


rule contact_sheet:
    input:
        videos=lambda w: every(RUN + "/video.mp4", [w.model]),
        checkpoints=lambda w: every(RUN + "/denoise", [w.model]),
    output:
        sheets=directory(f"{OUT}/gallery/{{model}}/sheets"),
        thumbs=directory(f"{OUT}/gallery/{{model}}/thumbs"),
    log:
        f"{OUT}/logs/contact_sheet/{{model}}.log",
    conda:
        "env.yaml"
    script:
        "job.py"


rule export_official:
    input:
        lambda w: every(RUN + "/video.mp4", [w.model]),
    output:
        directory(f"{OUT}/eval_res/{{model}}"),
    log:
        f"{OUT}/logs/export_official/{{model}}.log",
    localrule: True
    conda:
        "env.yaml"
    script:
        "job.py"


rule gallery:
    input:
        sheets=expand(f"{OUT}/gallery/{{model}}/sheets", model=MODELS),
        videos=every(RUN + "/video.mp4"),
        images=[row["image"] for row in SHEET.values()],
        scores=per_task("judge"),
        transitions=per_task("transitions"),
    output:
        index=f"{OUT}/gallery/index.html",
        pages=expand(f"{OUT}/gallery/{{model}}/{{task}}.html", model=MODELS, task=TASKS),
    log:
        f"{OUT}/logs/gallery.log",
    localrule: True
    conda:
        "env.yaml"
    params:
        tasks=SHEET,
    script:
        "job.py"


rule tables:
    input:
        scores=per_task("judge"),
        transitions=per_task("transitions"),
        selected=f"{OUT}/instances/selected.csv",
    output:
        TABLES,
    log:
        f"{OUT}/logs/tables.log",
    localrule: True
    conda:
        "env.yaml"
    params:
        models=list(MODELS),
    script:
        "job.py"


rule plots:
    input:
        TABLES,
    output:
        f"{OUT}/plots/a.png",
        f"{OUT}/plots/b.png",
        f"{OUT}/plots/c.png",
    log:
        f"{OUT}/logs/plots.log",
    localrule: True
    conda:
        "env.yaml"
    script:
        "job.py"
