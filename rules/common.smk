import functools
import os
import shlex
import sys

import yaml
from snakemake.exceptions import WorkflowError

import workflow_scripts
from workflow_scripts.benchmark import TASK_NAME
from workflow_scripts.study import StudyError, load_study

OUT = config["outdir"]
RUN = f"{OUT}/{{model}}/{{task}}/{{instance}}"

with open(config["model_registry"], encoding="utf-8") as registry_file:
    REGISTRY = yaml.safe_load(registry_file)
validate(REGISTRY, "../config/schemas/models.schema.yaml")

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


def literal(text):
    """`text` as one word of a `shell:` command: shell-quoted, braces kept from Snakemake."""
    return shlex.quote(str(text)).replace("{", "{{").replace("}", "}}")


# The per-instance rules call their entry points as shell commands, not `script:`:
# Snakemake prepares a script job's source while it builds the DAG, about a fifth of a
# paper-size dry run. A deployed env (conda, container) brings its own `python`.
PYTHON = "python" if workflow.deployment_settings.deployment_method else sys.executable
ENTRY_DIR = os.path.join(os.path.dirname(workflow_scripts.__file__), "entry")
ENTRY = f"{literal(PYTHON)} {literal(ENTRY_DIR)}"


def one_of(names):
    """A wildcard constraint matching exactly `names` (nothing when there are none)."""
    return "|".join(names) or "(?!)"


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
    """Whether the VLM stages run (`judge.enabled`; `auto`: when its API key is set)."""
    judge = config["judge"]
    enabled = judge["enabled"]
    if enabled == "auto":
        enabled = bool(os.environ.get(judge["api_key_env"]))
        if not enabled and workflow.is_main_process:
            logger.info(
                f"Judge stages left out: set ${judge['api_key_env']} (the judge's API key), "
                "or judge.enabled: true, to run them."
            )
    return enabled


def judge_targets(targets):
    """`targets` when the VLM stages run, else none."""
    return targets if judge_enabled() else []
