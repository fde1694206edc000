"""Running the real workflow from tests: a config in a temporary directory, Snakemake's CLI."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml
from snakemake import cli

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "tasks" / "examples"


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
    for key in ("root", "taxonomy", "overlap"):
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


def snakemake_cli(argv: list[str], cwd: Path | None = None) -> subprocess.CompletedProcess:
    """The `snakemake` command with `argv`, in `cwd`: Snakemake's own command line
    (`snakemake.cli.main`) run in this process, so the same parse, checks, scheduling and
    exit status without a new interpreter's imports for each run. Its log and errors, and
    what its jobs print, end up together in `stdout`, as from a child process with both
    streams on one pipe."""
    with tempfile.TemporaryFile("w+", encoding="utf-8", buffering=1) as output:
        with _both_streams_to(output, cwd):
            try:
                cli.main(argv)
            except SystemExit as exit:
                code = exit.code
        output.seek(0)
        return subprocess.CompletedProcess(["snakemake", *argv], code, output.read(), "")


@contextlib.contextmanager
def _both_streams_to(output, cwd: Path | None):
    """Python's and the file descriptors' stdout and stderr (a job's too) into `output`, in
    `cwd`; this process's working directory (Snakemake's `-d` moves it too) back after."""
    here = os.getcwd()
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    os.dup2(output.fileno(), 1)
    os.dup2(output.fileno(), 2)
    try:
        if cwd is not None:
            os.chdir(cwd)
        with contextlib.redirect_stdout(output), contextlib.redirect_stderr(output):
            yield
    finally:
        output.flush()
        for fd, copy in zip((1, 2), saved, strict=True):
            os.dup2(copy, fd)
            os.close(copy)
        os.chdir(here)
