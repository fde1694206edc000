"""Killed mid-wait, then run again: the doubles count exactly one submission per video."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import yaml

from tests.support.fake_video_api import API_KEY, FakeVideoAPI
from tests.support.video_api_run import KEY_ENV, MODELS, api_config, submissions_per_video
from tests.support.workflow import REPO, snakemake

POLLS = 25


def start(workdir, config, *args) -> subprocess.Popen:
    path = workdir / "config.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    command = [sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "-d", str(workdir)]
    with open(workdir / "first.log", "w") as log:
        return subprocess.Popen([*command, "--configfile", str(path), "--cores", "2", *args],
                                stdout=log, stderr=log, start_new_session=True)  # fmt: skip


def kill_when_polling(process, fake, count: int, workdir) -> set[tuple[str, ...]]:
    """SIGKILL Snakemake and its jobs once `count` operations exist and each was polled; the
    (model, task, instance) whose operation the kill left in flight."""
    deadline = time.monotonic() + 300
    while len(fake.submissions) < count or any(op.polls_left == POLLS for op in fake.submissions):
        assert process.poll() is None and time.monotonic() < deadline
        time.sleep(0.1)
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    states = (workdir / "results" / "resume").glob("*/*/*/*.json")
    return {p.parts[-4:-1] for p in states if json.loads(p.read_text())["status"] == "submitted"}


def test_a_run_killed_mid_wait_resumes_the_same_operations(tmp_path, monkeypatch):
    """Every provider's video of one instance: killed twice mid-wait (the second time a plain
    rerun), then --rerun-incomplete, then every job forced: exactly one submission each."""
    monkeypatch.setenv(KEY_ENV, API_KEY)
    with FakeVideoAPI(polls=POLLS) as fake:  # 25 polls of 0.2 s: each job waits ~5 s
        config = api_config(tmp_path, fake)
        config["benchmark"] |= {"tasks": ["sorting"], "levels": [1]}  # one video a provider
        cut_off = kill_when_polling(start(tmp_path, config, "generate_all"), fake, 2, tmp_path)
        assert len(cut_off) == 2  # both jobs killed with their operation submitted, unfinished
        killed = [len(fake.submissions)]
        assert snakemake(tmp_path, config, "--unlock").returncode == 0  # the killed run's lock
        process = start(tmp_path, config, "generate_all")
        cut_off |= kill_when_polling(process, fake, killed[0] + 2, tmp_path)
        killed.append(len(fake.submissions) - killed[0])
        fake.polls = 2
        for op in fake.submissions:
            op.polls_left = min(op.polls_left, 2)
        assert snakemake(tmp_path, config, "--unlock").returncode == 0
        result = snakemake(tmp_path, config, "generate_all", "--rerun-incomplete")
        assert result.returncode == 0, result.stdout[-3000:]
        per_video = submissions_per_video(fake)
        assert len(per_video) == len(MODELS) and set(per_video.values()) == {1}
        logs = (tmp_path / "results" / "logs" / "generate_api").rglob("*.log")
        resumed = {
            (*log.parts[-3:-1], log.stem) for log in logs if "resuming operation" in log.read_text()
        }
        assert cut_off <= resumed  # every job a kill cut off waited on its operation again
        assert len(resumed) <= sum(killed)  # and only jobs whose operation a killed run made
        again = snakemake(tmp_path, config, "generate_all", "--forcerun", "generate_api")
        assert again.returncode == 0, again.stdout[-3000:]
        assert len(fake.submissions) == len(MODELS)  # a forced rerun: the same operations
    print(f"\nkilled with {killed} new operations in flight; {len(fake.submissions)} submissions")


def test_an_expired_operation_stops_the_job_until_resubmission_is_allowed(tmp_path, monkeypatch):
    monkeypatch.setenv(KEY_ENV, API_KEY)
    with FakeVideoAPI(polls=1000) as fake:
        config = api_config(tmp_path, fake, timeout_min=0.05)  # 3 s, then the job fails
        config["benchmark"]["tasks"] = ["maze_square"]
        config["benchmark"]["levels"] = [1]
        config["models"] = ["sora2"]
        first = snakemake(tmp_path, config, "generate_all")
        assert first.returncode != 0 and "still running after" in first.stdout
        fake.forget()
        fake.polls = 1
        second = snakemake(tmp_path, config, "generate_all")
        assert second.returncode != 0
        log = next((tmp_path / "results" / "logs" / "generate_api").rglob("*.log")).read_text()
        assert "no longer knows operation video_0001" in log and "video_api.resubmit: true" in log
        assert len(fake.submissions) == 1
        config["video_api"]["resubmit"] = True
        third = snakemake(tmp_path, config, "generate_all")
        assert third.returncode == 0, third.stdout[-3000:]
        assert len(fake.submissions) == 2
