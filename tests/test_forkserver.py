"""The fork server behind the VLM entry points: a job runs as a forked child of one server
with its own directory, environment, streams and exit status, and dies with its process."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def probe(argv: list[str]) -> None:
    """A job: reports what it runs with, then exits with the status its first argument names."""
    where = {"argv": argv, "cwd": os.getcwd(), "x": os.environ.get("PROBE_X")}
    print(json.dumps({**where, "pid": os.getpid(), "server": os.getppid()}))
    print("to the log too", file=sys.stderr)
    sys.exit(int(argv[0]))


def sleeper(argv: list[str]) -> None:
    """A job that records its pid in the file `argv[0]` and runs until killed."""
    Path(argv[0]).write_text(str(os.getpid()))
    time.sleep(120)


def job(target: str, args: list[str], cwd: Path, **env) -> subprocess.Popen:
    code = f"from workflow_scripts.forkserver import run; run({target!r}, {args!r})"
    env = {**os.environ, "PYTHONPATH": str(REPO), **env}
    return subprocess.Popen(
        [sys.executable, "-c", code],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_a_job_runs_forked_in_its_own_directory_environment_and_streams(tmp_path):
    first = job("tests.test_forkserver:probe", ["3", "b"], tmp_path, PROBE_X="one")
    out, err = first.communicate(timeout=120)
    assert first.returncode == 3, err
    seen = json.loads(out)
    assert (seen["argv"], seen["cwd"], seen["x"]) == (["3", "b"], str(tmp_path), "one")
    assert seen["pid"] != first.pid and err == "to the log too\n"
    second = job("tests.test_forkserver:probe", ["0"], REPO, PROBE_X="two")
    out, _ = second.communicate(timeout=120)
    assert second.returncode == 0 and json.loads(out)["x"] == "two"
    assert json.loads(out)["server"] == seen["server"]  # one server, its imports paid once


def test_a_killed_job_takes_its_forked_child_with_it(tmp_path):
    pid_file = tmp_path / "pid"
    client = job("tests.test_forkserver:sleeper", [str(pid_file)], tmp_path)
    deadline = time.monotonic() + 120
    while not pid_file.exists() or not pid_file.read_text():
        assert time.monotonic() < deadline and client.poll() is None
        time.sleep(0.05)
    child = int(pid_file.read_text())
    os.kill(child, 0)  # running
    client.send_signal(signal.SIGKILL)
    client.wait()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)
    raise AssertionError(f"the job's child {child} outlived it")
