"""A video API job requeued by SLURM mid-wait (`scontrol requeue`) waits on the same
operation when SLURM runs it again: one submission (the real local SLURM)."""

from __future__ import annotations

import time

import pytest

from tests.support.fake_video_api import FakeVideoAPI
from tests.support.video_api_run import KEY_ENV, api_config
from tests.workflow.test_slurm import SQUEUE, squeue, start, watch

pytestmark = pytest.mark.xdist_group("slurm")  # one SLURM on the machine at a time


def test_a_requeued_api_job_waits_on_the_same_operation(slurm_cluster, tmp_path, monkeypatch):
    monkeypatch.setenv(KEY_ENV, "test-video-key")  # sbatch passes the environment on
    with FakeVideoAPI(polls=100_000) as fake:
        config = api_config(tmp_path, fake)
        config["benchmark"] |= {"tasks": ["sorting"], "levels": [1]}
        config["models"] = ["veo31"]
        before = set(squeue(slurm_cluster))
        process = start(tmp_path, config, "generate_all")

        def waiting(_) -> bool:
            assert process.poll() is None, (tmp_path / "run.log").read_text()[-3000:]
            return len(fake.submissions) == 1 and fake.submissions[0].polls_left < 100_000 - 3

        watch(slurm_cluster, waiting, timeout=300)
        (job,) = set(squeue(slurm_cluster)) - before
        slurm_cluster.run("scontrol", "requeue", job)
        watch(slurm_cluster, lambda _: " PENDING " in squeue(slurm_cluster)[job], timeout=120)
        slurm_cluster.run("scontrol", "update", f"JobId={job}", "StartTime=now")
        polls = len(fake.requests)
        while len(fake.requests) == polls:  # the requeued job polls again ...
            assert process.poll() is None, (tmp_path / "run.log").read_text()[-3000:]
            time.sleep(0.2)
        fake.submissions[0].polls_left = 2  # ... and the operation finishes
        seen = watch(slurm_cluster, lambda _: process.poll() is not None)
        print(f"\nsqueue -O {SQUEUE}, after the requeue:", *seen, sep="\n")
        assert process.wait() == 0, (tmp_path / "run.log").read_text()[-4000:]
        assert len(fake.submissions) == 1  # requeued, waited on again, never submitted twice
        assert set(squeue(slurm_cluster)) - before == {job}
        logs = list((tmp_path / "results" / "logs" / "generate_api").rglob("*.log"))
        assert "resuming operation" in logs[0].read_text()
        print(f"submissions: {len(fake.submissions)}; SLURM jobs: {job} (requeued once)")
