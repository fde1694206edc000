import functools
import json
import os
import shlex
import sys
import time

import yaml
from snakemake.exceptions import WorkflowError

import workflow_scripts
from workflow_scripts.benchmark.instances import TASK_NAME
from workflow_scripts.benchmark.study import StudyError, load_study
from workflow_scripts.common.config import SchemaError, check
from workflow_scripts.common.layout import STAGES
from workflow_scripts.judge.checkpoints import checkpoint_steps
from workflow_scripts.judge.settings import instance_params, judge_params
from workflow_scripts.judge.summary import judge_errors_line, service_failure_line
from workflow_scripts.transitions.settings import load_transitions

RUN_STARTED = time.time()
OUT = config["outdir"]
TASK = f"{OUT}/{{model}}/{{task}}"  # a (model, task): the VLM jobs' unit
RUN = f"{TASK}/{{instance}}"  # a (model, instance): the GPU jobs' unit

with open(config["model_registry"], encoding="utf-8") as registry_file:
    REGISTRY = yaml.safe_load(registry_file)
try:
    schema = os.path.join(
        workflow.current_basedir, "../config/schemas/models.schema.yaml"
    )
    check(REGISTRY, schema, config["model_registry"])
except SchemaError as err:
    raise WorkflowError(str(err)) from None
validate(REGISTRY, "../config/schemas/models.schema.yaml")  # fills in the defaults

# Everything the rules need, checked before any job; every problem at once.
try:
    STUDY = load_study(config, REGISTRY, image_cache=".snakemake/vgi_image_check.json")
    CHECKPOINTS = checkpoint_steps(config, STUDY)  # judged too: judge.checkpoints
    TRANSITIONS = load_transitions(config, STUDY)
    # What determines each VLM rule's answers, its prompt templates included (per rule:
    # a template edit reruns only the rule whose calls read it).
    JUDGE_PARAMS = judge_params(config["judge"])
    TRANSITION_PARAMS = judge_params(config["judge"], ["transition"])
except ValueError as err:  # StudyError included
    raise WorkflowError(str(err)) from None
if STUDY.videos and workflow.is_main_process:
    logger.info(
        f"No transition labels for {', '.join(STUDY.videos)}: videos made elsewhere "
        "have no denoising checkpoints."
    )

INSTANCES = STUDY.instances
IMAGE = INSTANCES["image"].to_dict()
PROMPT = INSTANCES["prompt"].to_dict()
TASKS = {task: list(rows.index) for task, rows in INSTANCES.groupby("task", sort=False)}
GENERATION_PARAMS = {model: STUDY.generation_params(model) for model in STUDY.models}

# How `generate`'s shell command finds the interpreter, its entry and the registry (read
# for `runtime`, which changes no video). Snakemake reruns a job whose command text
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
    "VGI_REGISTRY": config["model_registry"],
}
GENERATE_EXPORTS = "".join(
    f"export {k}={shlex.quote(v)}; " for k, v in GENERATE_ENV.items()
)
# Snakemake formats the prefix like a command: braces (a registry path may hold them) doubled.
shell.prefix(GENERATE_EXPORTS.replace("{", "{{").replace("}", "}}"))


wildcard_constraints:
    model="|".join(STUDY.models),
    task=TASK_NAME.pattern,
    instance="[^/]+_lv[0-9]+_[^/]+",


def one_of(names):
    """A wildcard constraint matching exactly `names` (nothing when there are none)."""
    return "|".join(names) or "(?!)"


def instance_image(wildcards):
    """Input function: the instance's input image; a target outside the run's selection is
    an error naming it (generate starts from the image)."""
    try:
        return IMAGE[wildcards.instance]
    except KeyError:
        raise WorkflowError(
            f"{wildcards.instance} is not one of this run's selected instances (see "
            f"{OUT}/instances/selected.csv; benchmark.tasks, levels, subset choose them)."
        ) from None


def selected_task(wildcards):
    """The task's instances; a task outside the run's selection is an error naming it."""
    try:
        return TASKS[wildcards.task]
    except KeyError:
        raise WorkflowError(
            f"{wildcards.task} has none of this run's selected instances (see "
            f"{OUT}/instances/selected.csv; benchmark.tasks, levels, subset choose them)."
        ) from None


def task_runs(pattern):
    """Input function: `pattern` (under RUN) for every selected instance of the job's task."""
    return lambda w: [
        pattern.format(model=w.model, task=w.task, instance=instance)
        for instance in selected_task(w)
    ]


def task_images(wildcards):
    """Input function: the input and ground-truth images of the job's task."""
    rows = INSTANCES.loc[selected_task(wildcards)]
    return [path for path in [*rows["image"], *rows["gt_image"]] if path]


def task_instances(wildcards):
    """Params function: what the VLM jobs read of the task's instances, by id (texts and
    image paths): an edited rubric reruns its task's jobs."""
    rows = INSTANCES.loc[selected_task(wildcards)]
    return {instance: instance_params(row) for instance, row in rows.iterrows()}


def per_instance(pattern, models=STUDY.models):
    """`pattern` (under RUN) for every selected (model, instance) of `models`."""
    return [
        pattern.format(model=model, task=task, instance=instance)
        for model in models
        for instance, task in INSTANCES["task"].items()
    ]


def per_task(stage, models=STUDY.models):
    """The folder of VLM rule `stage` (common.layout.STAGES) for every (model, task)."""
    assert stage in STAGES
    return [f"{OUT}/{model}/{task}/{stage}" for model in models for task in TASKS]


def model_resource(name, default):
    """A per-model resource from the registry's `resources`."""
    return lambda wildcards: STUDY.models[wildcards.model].resources.get(name, default)


def model_runs(pattern):
    """Input function: `pattern` (under RUN) for every selected instance of the job's model."""
    return lambda wildcards: [
        pattern.format(model=wildcards.model, task=task, instance=instance)
        for instance, task in INSTANCES["task"].items()
    ]


def generated_runs(pattern):
    """Input function: `model_runs(pattern)` for a model the workflow generates, else none
    (videos made elsewhere have no checkpoints)."""
    return lambda wildcards: (
        model_runs(pattern)(wildcards)
        if STUDY.models[wildcards.model].generates
        else []
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
    return enabled


def judge_targets(targets):
    """`targets` when the VLM stages run, else none."""
    return targets if judge_enabled() else []


def report_judge_errors(failed=False):
    """Log how many scores and transition labels are errors, when this run wrote any; after
    a failed run, the judge service failure that stopped it, if one did."""
    if not judge_enabled():
        return
    if failed and (line := service_failure_line(f"{OUT}/logs", RUN_STARTED)):
        logger.error(line)
    line = judge_errors_line(
        rules.judge_all.input,
        rules.transitions_all.input,
        RUN_STARTED,
        f"{OUT}/judge_errors.csv",
    )
    if line:
        logger.warning(line)
