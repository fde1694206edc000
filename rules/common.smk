import contextlib
import functools
import json
import math
import os
import re
import shlex
import sys
import time
from pathlib import Path

import yaml
from snakemake.exceptions import WorkflowError

import workflow_scripts
from workflow_scripts.benchmark.coverage import narrower_run_note
from workflow_scripts.benchmark.instances import TASK_NAME
from workflow_scripts.benchmark.paper import paper_rows
from workflow_scripts.benchmark.study import StudyError, load_study
from workflow_scripts.common.config import SchemaError, check
from workflow_scripts.common.files import OutdirFileError
from workflow_scripts.common.outdir import OutdirLock, OutdirLockError
from workflow_scripts.common.keys import missing_key_error
from workflow_scripts.common.layout import (
    BATCH_RULE,
    DEFAULT_CONDITION,
    RESUME,
    STAGES,
    judge_folder,
)
from workflow_scripts.judge.checkpoints import checkpoint_steps
from workflow_scripts.judge.settings import (
    MAIN,
    frame_params,
    image_instance_params,
    instance_params,
    judge_configs,
    judge_params,
)
from workflow_scripts.judge.summary import judge_errors_line, service_failure_line
from workflow_scripts.transitions.settings import load_transitions
from vgi_models.registry import (
    PIPELINE,
    SCHEMA as REGISTRY_SCHEMA,
    weight_problems,
    with_defaults,
)
from vgi_models.runtime import warmup_minutes

RUN_STARTED = time.time()
OUT = config["outdir"]
TASK = f"{OUT}/{{model}}/{{task}}"  # a (model, task): the VLM jobs' unit
RUN = f"{TASK}/{{instance}}"  # a (model, instance): the GPU jobs' unit

with open(config["model_registry"], encoding="utf-8") as registry_file:
    REGISTRY = yaml.safe_load(registry_file)
try:
    check(REGISTRY, REGISTRY_SCHEMA, config["model_registry"])
except SchemaError as err:
    raise WorkflowError(str(err)) from None
REGISTRY = with_defaults(REGISTRY)

# Everything the rules need, checked before any job; every problem at once.
try:
    STUDY = load_study(config, REGISTRY, image_cache=".snakemake/vgi_image_check.json")
    CHECKPOINTS = checkpoint_steps(config, STUDY)  # judged too: judge.checkpoints
    TRANSITIONS = load_transitions(config, STUDY)
    # the models that name a row of the paper's tables (tables/vs_paper.csv)
    PAPER_ROWS = paper_rows(REGISTRY, list(STUDY.models))
    # What determines each VLM rule's answers, its prompt templates included (per rule:
    # a template edit reruns only the rule whose calls read it).
    JUDGE_PARAMS = judge_params(config["judge"])
    # The judge variants (`judges:`, each merged over `judge`), by name; `main` is not one.
    VARIANTS = {
        name: judge_params(settings)
        for name, settings in judge_configs(config).items()
        if name != MAIN
    }
    TRANSITION_PARAMS = judge_params(config["judge"], ["transition"])
    FRAME_PARAMS = frame_params(config["judge"])  # which frames the judge sends
except ValueError as err:  # StudyError included
    raise WorkflowError(str(err)) from None
if STUDY.without_checkpoints and workflow.is_main_process:
    logger.info(
        f"No transition labels or trajectory tables for {', '.join(STUDY.without_checkpoints)}: "
        "videos made elsewhere, by a video API or held still have no denoising checkpoints."
    )

JUDGES = [MAIN, *VARIANTS]  # every judge of the run, by name
RELIABILITY = config["judge_reliability"]

INSTANCES = STUDY.instances
# Every run: the `model` wildcard is a run key (common.layout.run_key): the model's plain
# key for its main run (condition `default`, the registry's seed), else <model>@<condition>
# and/or @seed<s>. Each condition's instances, images, prompts and tasks by condition.
RUNS = STUDY.runs  # run key -> (model, condition, seed)
CONDITIONS = [DEFAULT_CONDITION, *STUDY.conditions]
ROWS = {condition: STUDY.instances_of(condition) for condition in CONDITIONS}
IMAGE = {condition: rows["image"].to_dict() for condition, rows in ROWS.items()}
PROMPT = {condition: rows["prompt"].to_dict() for condition, rows in ROWS.items()}
TASKS = {
    condition: {
        task: list(group.index) for task, group in rows.groupby("task", sort=False)
    }
    for condition, rows in ROWS.items()
}
# Each run's own instances and tasks: a model made elsewhere (`source: videos`) is judged
# on the instances its folder holds (the rest are counted in tables/coverage.csv).
RUN_ROWS = {
    key: STUDY.rows_of(model, condition) for key, (model, condition, _) in RUNS.items()
}
RUN_TASKS = {
    key: {task: list(group.index) for task, group in rows.groupby("task", sort=False)}
    for key, rows in RUN_ROWS.items()
}
# The coverage records (Study.coverage) of the video and of the image models made elsewhere.
VIDEO_COVERAGE = STUDY.coverage[STUDY.coverage["output"] == "video"].to_dict("records")
IMAGE_COVERAGE = STUDY.coverage[STUDY.coverage["output"] == "image"].to_dict("records")
GENERATION_PARAMS = {
    key: STUDY.generation_params(model, seed) for key, (model, _, seed) in RUNS.items()
}
PIPELINE_RUNS = [key for key, (model, *_) in RUNS.items() if model in STUDY.pipelines]


def batches_of(key):
    """The batches of a pipeline run whose model sets `resources.batch` (over 1): its
    instances, as (task, instance), in the selection's order, cut into batches of that size.
    """
    size = STUDY.models[RUNS[key][0]].resources.get("batch", 1)
    members = list(RUN_ROWS[key]["task"].items())
    return [
        [(task, instance) for instance, task in members[i : i + size]]
        for i in range(0, len(members), size)
    ]


# The batch rules (rules/generate.smk): their names, each run's batches in order; a run
# whose model has no `resources.batch` over 1 has a `generate` job per instance.
BATCHES = {
    "_".join([BATCH_RULE, re.sub(r"\W", "_", key), str(number)]): (key, members)
    for key in PIPELINE_RUNS
    if STUDY.models[RUNS[key][0]].resources.get("batch", 1) > 1
    for number, members in enumerate(batches_of(key))
}
SINGLE_RUNS = [
    key for key in PIPELINE_RUNS if key not in {k for k, _ in BATCHES.values()}
]
API_RUNS = [key for key, (model, *_) in RUNS.items() if model in STUDY.api]
STATIC_RUNS = [key for key, (model, *_) in RUNS.items() if model in STUDY.static]
SWAPPED = {condition: STUDY.swapped(condition) for condition in CONDITIONS}

# How `generate`'s shell command finds the interpreter, its entry and the registry (read
# for `runtime`, whose values that change the video its params carry too). Snakemake
# reruns a job whose command text
# changed, so the text holds none of them: they are variables of the shell commands
# (`shell.prefix`), set here (a SLURM job parses this file again; a deployed env brings
# its own `python`), not `{NAME}`s in the text, which `snakemake --lint` flags. The VLM
# rules are `script:` rules: Snakemake picks their interpreter and hands them the config.
GENERATE_ENV = {
    "VGI_PYTHON": (
        "python" if workflow.deployment_settings.deployment_method else sys.executable
    ),
    "VGI_GENERATE": os.path.join(
        os.path.dirname(workflow_scripts.__file__), "entry/generate.py"
    ),
    "VGI_GENERATE_IMAGE": os.path.join(
        os.path.dirname(workflow_scripts.__file__), "entry/generate_image.py"
    ),
    "VGI_REGISTRY": config["model_registry"],
    # resumable states of cut-off jobs: outside the outputs, which a failed job loses
    "VGI_RESUME_DIR": os.path.join(OUT, RESUME),
    "VGI_SAVE_EVERY": str(config["denoise"]["save_every"]),
}
# A prefix replaces Snakemake's own (bash strict mode), so it comes first. The prefix is not
# part of the command text Snakemake compares for reruns (`rule.shellcmd`).
SHELL_PREFIX = "".join(
    [
        "set -euo pipefail; ",
        *(f"export {k}={shlex.quote(v)}; " for k, v in GENERATE_ENV.items()),
    ]
)
# Snakemake formats the prefix like a command: braces (a registry path may hold them) doubled.
shell.prefix(SHELL_PREFIX.replace("{", "{{").replace("}", "}}"))


wildcard_constraints:
    model="|".join(map(re.escape, [*RUNS, *STUDY.image_models])),
    task=TASK_NAME.pattern,
    instance="[^/]+_lv[0-9]+_[^/]+",


def one_of(names):
    """A wildcard constraint matching exactly `names` (nothing when there are none)."""
    return "|".join(map(re.escape, names)) or "(?!)"


def condition_of(wildcards):
    """The input condition of the job's run (the `model` wildcard is a run key)."""
    return RUNS[wildcards.model][1]


def _outside(what, condition):
    where = "" if condition == DEFAULT_CONDITION else f" (condition {condition})"
    return WorkflowError(
        f"{what} of this run's selected instances{where} (see {OUT}/instances/selected.csv; "
        f"benchmark.tasks, levels, subset and conditions.<name> choose them)."
    )


def instance_image(wildcards):
    """Input function: the instance's input image under its run's condition; a target
    outside the selection is an error naming it (generate starts from the image)."""
    condition = condition_of(wildcards)
    try:
        return IMAGE[condition][wildcards.instance]
    except KeyError:
        raise _outside(f"{wildcards.instance} is not one", condition) from None


def shortcut_image(wildcards):
    """Input function: the image a shortcut baseline starts from: the instance's, or for
    `motion: swap` the next selected instance's of the same task (Study.swapped)."""
    image = instance_image(wildcards)  # an instance outside the selection: named
    model, condition, _ = RUNS[wildcards.model]
    if STUDY.models[model].generation.get("motion") != "swap":
        return image
    return IMAGE[condition][SWAPPED[condition][wildcards.instance]]


def instance_prompt(wildcards):
    """Params function: the instance's prompt under its run's condition."""
    return PROMPT[condition_of(wildcards)][wildcards.instance]


def selected_task(wildcards):
    """The task's instances of the job's run (a model made elsewhere: those its folder
    holds); a task outside the run's selection is an error naming it."""
    condition = condition_of(wildcards)
    try:
        return RUN_TASKS[wildcards.model][wildcards.task]
    except KeyError:
        if wildcards.task in TASKS[condition]:
            raise WorkflowError(
                f"{wildcards.model}'s folder holds no video of task {wildcards.task} "
                f"(see {OUT}/tables/coverage_missing.csv)."
            ) from None
        raise _outside(f"{wildcards.task} has none", condition) from None


def task_runs(pattern):
    """Input function: `pattern` (under RUN) for every selected instance of the job's task."""
    return lambda w: [
        pattern.format(model=w.model, task=w.task, instance=instance)
        for instance in selected_task(w)
    ]


def task_checkpoints(wildcards):
    """Input function: the checkpoint folders of the job's task (generated runs only)."""
    return (
        task_runs(f"{RUN}/denoise")(wildcards)
        if wildcards.model in PIPELINE_RUNS
        else []
    )


def label_frames(wildcards):
    """Params function: the checkpoint steps whose frames the transition labels show and
    how many of each, as JSON (null: a run without checkpoints)."""
    if wildcards.model not in PIPELINE_RUNS:
        return "null"
    steps = sorted({step for pair in TRANSITIONS.pairs for step in pair})
    return json.dumps({"steps": steps, "frames": TRANSITIONS.frames_per_checkpoint})


@functools.cache
def task_inputs(run, task):
    """The input and ground-truth images of `task`'s instances of `run` (a run key), and
    what the VLM jobs read of each instance by id: built once per (run, task), not per job.
    """
    rows = RUN_ROWS[run].loc[RUN_TASKS[run][task]]
    images = [path for path in [*rows["image"], *rows["gt_image"]] if path]
    return images, {instance: instance_params(row) for instance, row in rows.iterrows()}


def task_images(wildcards):
    """Input function: the input and ground-truth images of the job's task."""
    selected_task(wildcards)  # a task outside the selection: the error naming it
    return task_inputs(wildcards.model, wildcards.task)[0]


def task_instances(wildcards):
    """Params function: what the VLM jobs read of the task's instances, by id (texts and
    image paths): an edited rubric reruns its task's jobs."""
    selected_task(wildcards)
    return task_inputs(wildcards.model, wildcards.task)[1]


def runs_of(models, main_only=False):
    """The run keys of `models` (main_only: their main runs, keyed by the model)."""
    models = set(models)
    return [
        key
        for key, (model, *_) in RUNS.items()
        if model in models and (key == model or not main_only)
    ]


def per_instance(pattern, models=STUDY.models, main_only=True):
    """`pattern` (under RUN) for every selected (model, instance) of `models`' main runs
    (main_only False: of every run, each over its condition's instances)."""
    return [
        pattern.format(model=key, task=task, instance=instance)
        for key in runs_of(models, main_only)
        for instance, task in RUN_ROWS[key]["task"].items()
    ]


def per_task(stage, models=STUDY.models, main_only=False):
    """The folder of VLM rule `stage` (common.layout.STAGES) for every (run, task) of
    `models` (main_only: of their main runs)."""
    assert stage in STAGES
    return [
        f"{OUT}/{key}/{task}/{stage}"
        for key in runs_of(models, main_only)
        for task in RUN_TASKS[key]
    ]


def per_variant(models=STUDY.models):
    """The folders of every judge variant (rule judge_variant) for every (model, task) of
    the main run (condition `default`, the registry's seed)."""
    return [
        str(judge_folder(OUT, model, task, name))
        for name in VARIANTS
        for model in models
        for task in RUN_TASKS[model]
    ]


def preference_files(wildcards):
    """Input function: the imported preference pairs (`judge_reliability.preferences`);
    rule judge_reliability without any human preferences is an error saying so."""
    files = [path for path in [RELIABILITY["preferences"]] if path]
    if not files and not ranking_files(wildcards):
        raise WorkflowError(
            "judge_reliability needs human preferences: set judge_reliability.preferences "
            "(a CSV: instance, model_a, model_b, preferred (a|b|tie), annotator) or "
            "judge_reliability.rankings (the preference page's folder, with rankings in it)."
        )
    return files


def ranking_files(wildcards):
    """Input function: the preference page's rankings, `<annotator>.csv` in the folder
    `judge_reliability.rankings` (python -m workflow_scripts.annotate preferences)."""
    folder = RELIABILITY["rankings"]
    return sorted(str(path) for path in Path(folder).glob("*.csv")) if folder else []


# The profile's retries (slurm/config.yaml): a job that failed, out of memory or out of time
# among the causes, is submitted again asking for RETRY_GROWTH times the memory and time
# limit of its previous attempt.
RETRY_GROWTH = 1.5
GROWS = ("mem_mb", "runtime")


def time_limit(spec, default=None, videos=1):
    """Minutes of a GPU job of `spec` (a ModelSpec) making `videos` videos, at its first
    attempt: the registry's `resources.runtime` (else `default`) per video, plus any
    compilation's warm-up once."""
    minutes = spec.resources.get("runtime", default)
    return None if minutes is None else minutes * videos + warmup_minutes(spec.runtime)


def job_resource(spec, name, default, attempt, videos=1):
    """Resource `name` of a job of `spec` making `videos` videos, at `attempt` (1 for the
    first): the registry's `resources` (else `default`); memory and time grown by
    RETRY_GROWTH per retry."""
    value = (
        time_limit(spec, default, videos)
        if name == "runtime"
        else spec.resources.get(name, default)
    )
    return math.ceil(value * RETRY_GROWTH ** (attempt - 1)) if name in GROWS else value


def model_resource(name, default):
    """A per-model resource of the job's run (`job_resource`)."""
    return lambda w, attempt: job_resource(
        STUDY.models[RUNS[w.model][0]], name, default, attempt
    )


def model_runs(pattern):
    """Input function: `pattern` (under RUN) for every selected instance of the job's model."""
    return lambda wildcards: [
        pattern.format(model=wildcards.model, task=task, instance=instance)
        for instance, task in RUN_ROWS[wildcards.model]["task"].items()
    ]


def generated_runs(pattern):
    """Input function: `model_runs(pattern)` for a model with denoising checkpoints, else
    none (videos made elsewhere, by a video API or held still have none)."""
    return lambda wildcards: (
        model_runs(pattern)(wildcards) if STUDY.models[wildcards.model].denoises else []
    )


@functools.cache
def judge_enabled():
    """Whether the VLM stages run (`judge.enabled`; `auto`: when its API key is set).
    Enabled without a key is an error before any job."""
    judge = config["judge"]
    enabled, variable = judge["enabled"], judge["api_key_env"]
    has_key = bool(os.environ.get(variable, "").strip())
    if enabled == "auto":
        enabled = has_key
        if not enabled and workflow.is_main_process:
            logger.info(
                f"Judge stages left out: set ${variable} (the judge's API key), "
                "or judge.enabled: true, to run them."
            )
    elif enabled and not has_key and workflow.is_main_process:
        raise WorkflowError(
            f"judge.enabled is true, but ${variable} (the judge's API key, named by "
            "judge.api_key_env) is not set."
        )
    if enabled:
        missing = {
            settings["api_key_env"]
            for name, settings in judge_configs(config).items()
            if name != MAIN and not os.environ.get(settings["api_key_env"], "").strip()
        }
        if missing and workflow.is_main_process:
            raise WorkflowError(
                f"judges: the variants' API key variable(s) {', '.join(sorted(missing))} "
                "(named by their api_key_env) are not set."
            )
    return enabled


def judge_off():
    """Why this run's VLM stages do not run (the status page and the gallery say it), or
    None when they do."""
    if config["judge"]["enabled"] is False:
        return "judge.enabled is false in the config"
    if not judge_enabled():
        return f"${config['judge']['api_key_env']} is not set"
    return None


def judge_targets(targets):
    """`targets` when the VLM stages run, else none."""
    return targets if judge_enabled() else []


@contextlib.contextmanager
def outdir_file_errors():
    """A file of the outdir that does not read back (common.files.OutdirFileError) ends
    the block with its message (path, problem, fix), never a traceback."""
    try:
        yield
    except OutdirFileError as err:
        raise WorkflowError(str(err)) from None


def check_api_keys():
    """At the start of a run (the DAG known, no job started): every job about to call an
    API has its key (a VLM job, `judge_api`: its judge's; a video API job, `video_api`: its
    model's); else an error naming the variable and the targets, before anything runs.
    """
    judges = {name: s["api_key_env"] for name, s in judge_configs(config).items()}

    def variable(job):
        if "video_api" in job.rule.resources:
            return STUDY.models[RUNS[job.wildcards.model][0]].api_key_env
        if "image_api" in job.rule.resources:
            return STUDY.image_models[job.wildcards.model].api_key_env
        return judges[job.wildcards.get("judge", MAIN)]

    error = missing_key_error(
        (
            (job.rule.name, variable(job))
            for job in workflow.dag.needrun_jobs()
            if {"judge_api", "video_api", "image_api"} & set(job.rule.resources)
        ),
        workflow.dag_settings.targets,
        os.environ,
    )
    if error:
        raise WorkflowError(error)


def check_weights():
    """At the start of a run (the DAG known, no job started): every model whose generate
    jobs are about to run has its weights (and LoRA) on disk; else every one missing, named,
    before anything runs. A plan, a dry run or a run of other targets needs none."""
    models = {
        RUNS[job.wildcards.model][0]
        for job in workflow.dag.needrun_jobs()
        if job.rule.name == "generate"
    } | {
        RUNS[BATCHES[job.rule.name][0]][0]
        for job in workflow.dag.needrun_jobs()
        if job.rule.name in BATCHES
    }
    image_models = {
        job.wildcards.model
        for job in workflow.dag.needrun_jobs()
        if job.rule.name == "generate_image"
    }
    specs = [STUDY.models[m] for m in sorted(models)]
    specs += [STUDY.image_models[m] for m in sorted(image_models)]
    problems = [p for spec in specs for p in weight_problems(spec)]
    if problems:
        lines = [f"  - {problem}" for problem in problems]
        raise WorkflowError("\n".join(["Nothing was run:", *lines]))


OUTDIR_LOCK = OutdirLock(OUT)


def lock_outdir():
    """At the start of a run (main process): hold the outdir's lock against a run in
    another working directory (common.outdir), else an error naming that run."""
    if not workflow.is_main_process:
        return
    try:
        if not OUTDIR_LOCK.acquire():
            logger.info(
                f"{OUT} is held by another run in this working directory: Snakemake's "
                "lock keeps their outputs apart."
            )
    except OutdirLockError as err:
        raise WorkflowError(str(err)) from None


def unlock_outdir():
    """At the end of a run: the outdir's lock goes."""
    OUTDIR_LOCK.release()


def note_narrower_run():
    """At the start of a run: a run narrower than what its outdir holds says so first (its
    products will shrink). Read here, not at parse time: no command pays for it, and an
    unreadable selected.csv cannot stop the run that rewrites it."""
    if note := narrower_run_note(OUT, STUDY.instances, STUDY.models, REGISTRY):
        logger.warning(note)


def report_judge_errors(failed=False):
    """Log how many scores (the main judge's and the variants') and transition labels are
    errors, when this run wrote any; after a failed run, the judge service failure that
    stopped it, if one did."""
    if not judge_enabled():
        return
    if failed and (line := service_failure_line(f"{OUT}/logs", RUN_STARTED)):
        logger.error(line)
    line = judge_errors_line(
        [*rules.judge_all.input, *rules.judges_all.input],  # the variants' scores too
        rules.transitions_all.input,
        RUN_STARTED,
        f"{OUT}/judge_errors.csv",
    )
    if line:
        logger.warning(line)


# The image branch (rules/images.smk): its instances, judge params and images.
IMAGE_INSTANCES = STUDY.image_instances
IMAGE_TASKS = {
    task: list(group.index)
    for task, group in IMAGE_INSTANCES.groupby("task", sort=False)
}
# Each image model's own instances by task (made elsewhere: those its folder holds).
IMAGE_MODEL_TASKS = {
    model: {
        task: list(group.index)
        for task, group in STUDY.image_rows_of(model).groupby("task", sort=False)
    }
    for model in STUDY.image_models
}
IMAGE_JUDGE_PARAMS = judge_params(config["judge"], ["image"])
IMAGE_PAPER_ROWS = paper_rows(REGISTRY, list(STUDY.image_models))
IMAGE_PIPELINES = [m for m, spec in STUDY.image_models.items() if spec.kind == PIPELINE]
IMAGE_APIS = [m for m, spec in STUDY.image_models.items() if spec.calls_api]
IMAGE_GENERATION_PARAMS = {
    model: STUDY.generation_params(model) for model in [*IMAGE_PIPELINES, *IMAGE_APIS]
}
IMAGE_RUNS = [  # every image of the branch
    f"{RUN}/image.png".format(model=model, task=task, instance=instance)
    for model in STUDY.image_models
    for instance, task in STUDY.image_rows_of(model)["task"].items()
]


def image_input(wildcards):
    """Input function: an image instance's input image; another instance is an error."""
    if wildcards.instance not in IMAGE_INSTANCES.index:
        raise WorkflowError(
            f"{wildcards.instance} is not an instance of the image branch (see "
            f"{OUT}/instances/selected.csv; its task ships no image prompt)."
        )
    return IMAGE_INSTANCES.loc[wildcards.instance, "image"]


def image_prompt(wildcards):
    """Params function: an image instance's image prompt."""
    return IMAGE_INSTANCES.loc[wildcards.instance, "image_prompt"]


def image_model_resource(name, default):
    """A per-model resource of an image model (`job_resource`)."""
    return lambda w, attempt: job_resource(
        STUDY.image_models[w.model], name, default, attempt
    )


def image_task(wildcards):
    """The task's instances of the job's image model in the image branch (made elsewhere:
    those its folder holds); another task is an error naming it."""
    try:
        return IMAGE_MODEL_TASKS[wildcards.model][wildcards.task]
    except KeyError:
        if wildcards.task in IMAGE_TASKS:
            raise WorkflowError(
                f"{wildcards.model}'s folder holds no image of task {wildcards.task} "
                f"(see {OUT}/tables/coverage_missing.csv)."
            ) from None
        raise WorkflowError(
            f"{wildcards.task} has no instances in the image branch (a selected task that "
            f"ships prompt/image_gen_prompt/{wildcards.task}.txt; see "
            f"{OUT}/instances/selected.csv)."
        ) from None


@functools.cache
def image_task_inputs(model, task):
    """The input and reference images of `task`'s image instances of `model`, and what the
    image judge reads of each instance by id."""
    rows = IMAGE_INSTANCES.loc[IMAGE_MODEL_TASKS[model][task]]
    images = [path for path in [*rows["image"], *rows["gt_image"]] if path]
    return images, {
        instance: image_instance_params(row) for instance, row in rows.iterrows()
    }


def image_references(wildcards):
    """Input function: the input and reference images of the job's task."""
    image_task(wildcards)
    return image_task_inputs(wildcards.model, wildcards.task)[0]


def image_instances(wildcards):
    """Params function: what the image judge reads of the task's instances, by id."""
    image_task(wildcards)
    return image_task_inputs(wildcards.model, wildcards.task)[1]


def image_task_runs(wildcards):
    """Input function: the images of every image instance of the job's task."""
    return [
        f"{RUN}/image.png".format(
            model=wildcards.model, task=wildcards.task, instance=i
        )
        for i in image_task(wildcards)
    ]
