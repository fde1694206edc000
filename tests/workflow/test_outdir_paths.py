"""Careless paths and endpoints before any job, on the real workflow: an outdir inside the
benchmark, a file or not writable is named with its fix; one outdir is locked against a
second working directory; a full disk while saving the resume state says so with the path;
a credential in `judge.base_url` never reaches status.html or status_errors.csv."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pandas as pd
import pytest
import torch

from tests.support.workflow import REPO, default_config, examples_without, snakemake
from vgi_models import state

BEFORE = "problem(s) found before scheduling any job"


def small_config(tmp_path, **benchmark):
    """The default config on maze_square's level 1, the held-image model, no judge."""
    config = default_config(tmp_path, tasks=["maze_square"], levels=[1], **benchmark)
    config.update(models=["static_image"], judge={"enabled": False})
    return config


def test_an_outdir_inside_the_release_is_refused_before_anything_is_written(tmp_path):
    root = examples_without(tmp_path / "bench", ["maze_square"])
    config = small_config(tmp_path, root=str(root))
    for outdir in (root / "results", root):
        config["outdir"] = str(outdir)
        result = snakemake(tmp_path, config)
        assert result.returncode != 0
        assert f"- outdir: {outdir} is " in result.stdout and BEFORE in result.stdout
        assert "set outdir to a folder outside it" in result.stdout
        assert sorted(p.name for p in root.iterdir()) == ["maze_square"]  # nothing written


@pytest.mark.parametrize("kind", ["file", "file above", "not writable"])
def test_an_outdir_that_cannot_be_written_is_named_with_the_fix(tmp_path, kind):
    config = small_config(tmp_path)
    outdir = tmp_path / "results"
    if kind == "file":
        outdir.write_text("not a folder")
        expected = f"- outdir: {outdir} is a file, not a folder"
    elif kind == "file above":
        outdir.write_text("not a folder")
        outdir = outdir / "study"
        expected = f"- outdir: {outdir} has a file in its path ({outdir.parent}), not a folder"
    else:  # /proc takes no new files, even from root
        outdir = "/proc/vgi-results"
        expected = f"- outdir: {outdir} is not writable (its nearest existing folder /proc)"
    config["outdir"] = str(outdir)
    result = snakemake(tmp_path, config)
    assert result.returncode != 0
    assert expected in result.stdout and BEFORE in result.stdout, result.stdout[-3000:]
    assert "--config outdir=" in result.stdout and "Traceback" not in result.stdout


HOLD = textwrap.dedent(
    """
    import sys, time
    from workflow_scripts.common.outdir import OutdirLock
    lock = OutdirLock(sys.argv[1])
    lock.acquire()
    print("held", flush=True)
    time.sleep(600)
    """
)


def test_a_second_working_directory_on_one_outdir_is_refused_naming_the_first(tmp_path):
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    outdir = tmp_path / "results"
    config = small_config(tmp_path)
    selected = outdir / "instances" / "selected.csv"

    # a run of the first working directory holds the outdir (as the workflow takes it)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(outdir)], cwd=first, env=env,
                              stdout=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert holder.stdout.readline().strip() == "held"
        result = snakemake(second, config, str(selected))
        assert result.returncode != 0
        assert f"outdir {outdir} is in use by a run in working directory {first} " in result.stdout
        assert f"pid {holder.pid}" in result.stdout
        assert f"remove {outdir / '.vgi-run.lock'}" in result.stdout
        assert not selected.exists()
    finally:
        holder.kill()
        holder.wait()

    # its process gone, the lock went with it; a run releases it at its end
    result = snakemake(second, config, str(selected))
    assert result.returncode == 0, result.stdout[-3000:]
    assert selected.exists() and not (outdir / ".vgi-run.holder").exists()
    result = snakemake(first, config, str(selected), "--forcerun", "select_instances")
    assert result.returncode == 0, result.stdout[-3000:]


def test_a_full_disk_while_saving_the_resume_state_says_so_with_the_path(tmp_path, monkeypatch):
    path = tmp_path / "resume" / "state.pt"
    real_fdopen = os.fdopen

    def full(fd, mode):  # the temporary file's writes go to /dev/full: a real ENOSPC
        real_fdopen(fd, mode).close()
        return open("/dev/full", mode)  # noqa: SIM115

    monkeypatch.setattr(state.os, "fdopen", full)
    big = {"latents": torch.zeros(1_000_000)}
    with pytest.raises(state.DiskFullError) as raised, state.disk_space(path, "the resume state"):
        state.write_atomic(path, lambda out: torch.save(big, out))
    message = str(raised.value)
    assert message.startswith(f"No space left on device to save the resume state {path} (")
    assert "inline_container" not in message and "MiB free there" in message
    assert list(path.parent.iterdir()) == []  # no half-written temporary file
    with pytest.raises(ValueError), state.disk_space(path, "the resume state"):  # others pass
        raise ValueError("not a disk")


def test_a_credential_in_the_judge_endpoint_never_reaches_the_status_files(tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_VLM_KEY", "test-key")
    config = small_config(tmp_path)
    config["judge"] = {"enabled": True, "backend": "openai", "api_key_env": "FAKE_VLM_KEY",
                       "max_attempts": 1}  # fmt: skip
    # nothing listens on port 9: the judge job fails, and its row gives the rerun command
    url = "http://vlmuser:hunter2@127.0.0.1:9/v1?key=SECRETKEY&sig=SIGVALUE&model=m"
    out = tmp_path / "results"
    target = out / "static_image" / "maze_square" / "judge"
    override = f"judge={{base_url: '{url}'}}"  # as the README gives nested keys
    result = snakemake(tmp_path, config, str(target), "--config", override)
    assert result.returncode != 0
    errors = pd.read_csv(out / "status_errors.csv")
    assert len(errors) >= 1 and "--config" in errors["rerun"].iloc[0]
    written = (out / "status_errors.csv").read_text() + (out / "status.html").read_text()
    written += "".join(p.read_text(errors="replace") for p in out.rglob("*") if p.is_file())
    for secret in ("hunter2", "vlmuser", "SECRETKEY", "SIGVALUE"):
        assert secret not in written, secret
    assert "http://***@127.0.0.1:9/v1?key=***&sig=***&model=m" in errors["rerun"].iloc[0]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("https://u:p@h.example/v1", "https://***@h.example/v1"),
        ("http://token@h:8/x?api_key=A1&model=m", "http://***@h:8/x?api_key=***&model=m"),
        ("h/x?X-Amz-Signature=ab&X-Amz-Date=1", "h/x?X-Amz-Signature=***&X-Amz-Date=1"),
        ("u?access_token=t&sig=s;key=k", "u?access_token=***&sig=***;key=***"),
        ("http://127.0.0.1:8080/v1 --cores 2", "http://127.0.0.1:8080/v1 --cores 2"),
    ],
)
def test_redaction_of_urls(text, expected):
    from workflow_scripts.common.redact import redact

    assert redact(text) == expected
