"""Running the real workflow from tests: a config in a temporary directory, Snakemake's CLI."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import yaml
from snakemake import cli

from tests.support.in_process import run_main
from workflow_scripts.benchmark.instances import load_instances

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "tasks" / "examples"
META = (REPO / "tasks" / "task_names.yaml", REPO / "tasks" / "overlap.yaml")  # taxonomy, overlap


def example_instances(**selection):
    """The bundled examples' instance table (`load_instances`), `tasks`/`levels` as given."""
    return load_instances(EXAMPLES, *META, **selection)


def first_example(task: str) -> dict:
    """The first level-1 instance of `task` in the bundled examples: its row and `instance`."""
    table = example_instances(tasks=[task], levels=[1])
    return {**table.iloc[0].to_dict(), "instance": table.index[0]}


def examples_without(root: Path, tasks: list[str], *instances: str) -> Path:
    """A copy of the bundled examples' `tasks` under `root` without `instances` (their input
    images and ground truths), for a study of fewer instances."""
    for task in tasks:
        shutil.copytree(EXAMPLES / task, root / task)
    for instance in instances:
        task, level = re.fullmatch(r"(.+)_lv(\d+)_\d+", instance).groups()
        for path in (root / task / "input_image" / f"lv{level}").glob(f"{instance}*"):
            path.unlink()
    return root


def default_config(workdir: Path, **benchmark) -> dict:
    """config/config.yaml with absolute paths, its outputs under `workdir`."""
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text(encoding="utf-8"))
    config["outdir"] = str(workdir / "results")
    config["model_registry"] = str(REPO / "config" / "models.yaml")
    for key in ("root", "taxonomy", "overlap", "paper_table", "paper_image_table"):
        config["benchmark"][key] = str(REPO / config["benchmark"][key])
    config["benchmark"].update(benchmark)
    return config


def snakemake(workdir: Path, config: dict, *args: str) -> subprocess.CompletedProcess:
    """`snakemake` on the repository's Snakefile in `workdir` with `config` layered on top."""
    workdir.mkdir(parents=True, exist_ok=True)
    path = workdir / "config.yaml"
    path.write_text(yaml.safe_dump(config, allow_unicode=True), encoding="utf-8")
    argv = ["-s", str(REPO / "Snakefile"), "-d", str(workdir), "--configfile", str(path)]
    return snakemake_cli([*argv, "--cores", "2", *args])


def snakemake_cli(
    argv: list[str], cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess:
    """The `snakemake` command with `argv`, in `cwd`, with the environment `env` (default:
    this process's): Snakemake's own command line (`snakemake.cli.main`) in this process
    (tests/support/in_process.py), so the same parse, checks, scheduling and exit status
    without a new interpreter's imports for each run. Its log and errors, and what its jobs
    print, end up together in `stdout`."""
    return run_main(lambda: cli.main(argv), ["snakemake", *argv], cwd, merged=True, env=env)


def killed_when(workdir: Path, config: dict, ready: Callable[[], bool], *args: str) -> None:
    """`snakemake *args` on `config` in `workdir` as a process of its own, SIGKILLed with its
    whole group (its jobs) once `ready()`; its log: workdir/killed.log."""
    path = workdir / "config.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    command = [sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "-d",
               str(workdir), "--configfile", str(path), *args]  # fmt: skip
    with open(workdir / "killed.log", "w") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT,
                                   start_new_session=True)  # fmt: skip
        deadline = time.monotonic() + 300
        while not ready():
            assert process.poll() is None, (workdir / "killed.log").read_text()[-3000:]
            assert time.monotonic() < deadline
            time.sleep(0.1)
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
