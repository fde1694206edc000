import functools
import json
import os
import sys
import time

import yaml
from snakemake.exceptions import WorkflowError

import workflow_scripts
from workflow_scripts.benchmark import TASK_NAME
from workflow_scripts.judge.summary import judge_errors_line, service_failure_line
from workflow_scripts.schema import SchemaError, check
from workflow_scripts.study import StudyError, load_study

RUN_STARTED = time.time()
OUT = config["outdir"]
RUN = f"{OUT}/{{model}}/{{task}}/{{instance}}"

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

try:
    STUDY = load_study(config, REGISTRY, image_cache=".snakemake/vgi_image_check.json")
except StudyError as err:
    raise WorkflowError(str(err)) from None

INSTANCES = STUDY.instances
IMAGE = INSTANCES["image"].to_dict()
PROMPT = INSTANCES["prompt"].to_dict()
GENERATION_PARAMS = {model: STUDY.generation_params(model) for model in STUDY.models}


wildcard_constraints:
    model="|".join(STUDY.models),
    task=TASK_NAME.pattern,
    instance="[^/]+",


# The per-instance rules call their entry points as shell commands, not `script:`:
# Snakemake prepares a script job's source while it builds the DAG, about a fifth of a
# paper-size dry run. Snakemake reruns a job whose command text changed, so the text holds
# no interpreter path, checkout location or registry path: they reach the command as
# environment variables (a deployed env brings its own `python`; a SLURM job parses this
# file again and sets them there).
os.environ.update(
    VGI_PYTHON=(
        "python" if workflow.deployment_settings.deployment_method else sys.executable
    ),
    VGI_ENTRY=os.path.join(os.path.dirname(workflow_scripts.__file__), "entry"),
    VGI_REGISTRY=config["model_registry"],
)
ENTRY = '"$VGI_PYTHON" "$VGI_ENTRY"'


def one_of(names):
    """A wildcard constraint matching exactly `names` (nothing when there are none)."""
    return "|".join(names) or "(?!)"


def instance_image(wildcards):
    """Input function: the instance's input image; a target outside the run's selection is
    an error naming it (the generate, judge and label rules start from the image)."""
    try:
        return IMAGE[wildcards.instance]
    except KeyError:
        raise WorkflowError(
            f"{wildcards.instance} is not one of this run's selected instances (see "
            f"{OUT}/instances/selected.csv; benchmark.tasks, levels, subset choose them)."
        ) from None


def per_instance(pattern, models=STUDY.models):
    """`pattern` (under RUN) for every selected (model, instance) of `models`."""
    return [
        pattern.format(model=model, task=task, instance=instance)
        for model in models
        for instance, task in INSTANCES["task"].items()
    ]


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
