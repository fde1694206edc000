"""What Snakemake makes of the rules' declarations, in one dry run of the default study: the
shell prefix of every shell rule (the generate job's variables, after bash's strict mode,
Snakemake's own prefix, which any `shell.prefix` replaces), and the GPU jobs' resources at
each attempt of the profile's retries."""

from __future__ import annotations

import subprocess

import pytest
import yaml
from snakemake.api import SnakemakeApi
from snakemake.settings.types import ConfigSettings, OutputSettings, ResourceSettings
from snakemake.shell import shell

from tests.support.workflow import REPO, default_config


@pytest.fixture(scope="module")
def dry_run(tmp_path_factory):
    """(the shell prefix, the workflow, its jobs) of a dry run of the default study, its
    model compiled (`runtime.compile`)."""
    folder = tmp_path_factory.mktemp("dry_run")
    registry = yaml.safe_load((REPO / "config" / "models.yaml").read_text(encoding="utf-8"))
    registry["tiny_wan22"]["runtime"] = {"compile": True}
    (folder / "models.yaml").write_text(yaml.safe_dump(registry), encoding="utf-8")
    config = default_config(folder) | {"model_registry": str(folder / "models.yaml")}
    path = folder / "config.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    with SnakemakeApi(OutputSettings(quiet={"all"})) as api:
        dag = api.workflow(
            snakefile=REPO / "Snakefile",
            workdir=folder,
            config_settings=ConfigSettings(configfiles=[path]),
            resource_settings=ResourceSettings(cores=1),
        ).dag()
        prefix = shell._process_prefix
        dag.execute_workflow(executor="dryrun")
        workflow = dag.workflow_api._workflow
        yield prefix, workflow, list(workflow.dag.jobs)


def test_shell_rules_run_in_strict_mode_with_the_generate_variables(dry_run):
    prefix = dry_run[0]
    failing_pipe = subprocess.run(["bash", "-c", f"{prefix} false | true"], capture_output=True)
    assert failing_pipe.returncode != 0
    unset = subprocess.run(["bash", "-c", f"{prefix} echo $NO_SUCH_VARIABLE"], capture_output=True)
    assert unset.returncode != 0
    exported = subprocess.run(
        ["bash", "-c", f'{prefix} echo "$VGI_SAVE_EVERY"'], capture_output=True, text=True
    )
    assert exported.stdout.strip() == "5"


def test_a_retried_job_asks_for_more_memory_and_time(dry_run):
    """Snakemake's own evaluation of a generate job's resources at attempts 1-3 (the profile's
    two retries): memory and time limit x1.5 each time (registry: 2000 MB, 15 min, plus the
    10 min allowed for compiling), its GPUs and threads as they were; the plan's estimate
    before any video is measured counts the warm-up too."""
    _, workflow, jobs = dry_run
    job = next(job for job in jobs if job.rule.name == "generate")
    asked = []
    for attempt in (1, 2, 3):
        job.attempt = attempt
        asked.append({k: job.resources[k] for k in ("mem_mb", "runtime", "gpu", "_cores")})
    assert asked == [
        {"mem_mb": 2000, "runtime": 25, "gpu": 0, "_cores": 1},
        {"mem_mb": 3000, "runtime": 38, "gpu": 0, "_cores": 1},
        {"mem_mb": 4500, "runtime": 57, "gpu": 0, "_cores": 1},
    ]
    assert workflow.globals["study_description"]()["runs"]["tiny_wan22"]["runtime_min"] == 25
