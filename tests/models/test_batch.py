"""A batch job (`resources.batch`): the real entry of a batch rule on two instances, its
weights loaded once, each instance's files byte for byte those of the instance's own job; run
again after Snakemake removed its outputs, it makes only what changed and restores the rest;
cut off mid-batch (a real SIGTERM, as SLURM sends), it resumes where it was."""

from __future__ import annotations

import io
import json
import logging
import os
import signal
from pathlib import Path
from unittest import mock

import pytest

from tests.support.workflow import EXAMPLES, REPO
from vgi_models.resume import Trajectory
from workflow_scripts.generate import generate_job

MODEL = "tiny_wan22"
INSTANCES = ["maze_square_lv1_001", "sorting_lv1_001"]
STEPS = [2, 20, 40]
PROMPT = "reach the exit"


class Batch:
    """The batch job of MODEL on `instances` under `root` (results/ and resume/ inside)."""

    def __init__(self, root: Path, specs, instances=INSTANCES, prompts=None):
        self.root, self.instances = root, instances
        self.prompts = prompts or [PROMPT] * len(instances)
        self.settings = specs[MODEL].settings() | {"denoise": {"steps": STEPS, "decode": "x0"}}

    def run_dir(self, instance: str) -> Path:
        return self.root / "results" / MODEL / instance.rsplit("_lv", 1)[0] / instance

    def options(self) -> list[str]:
        images = [str(EXAMPLES / i.rsplit("_lv", 1)[0] / "input_image" / "lv1" / f"{i}.png")
                  for i in self.instances]  # fmt: skip
        options = ["--registry", str(REPO / "config" / "models.yaml"), "--model", MODEL]
        options += ["--settings", json.dumps(self.settings), "--threads", "1"]
        options += ["--image", *images, "--prompt", *self.prompts, "--video"]
        options += [str(self.run_dir(i) / "video.mp4") for i in self.instances]
        return options + (["--batch"] if len(self.instances) > 1 else [])

    def env(self) -> dict:
        return {"VGI_RESUME_DIR": str(self.root / "resume"), "VGI_SAVE_EVERY": "5"}

    def run(self) -> str:
        """The job, in this process; its log lines."""
        log = io.StringIO()
        handler = logging.StreamHandler(log)
        logging.getLogger("vgi_models").addHandler(handler)
        try:
            with mock.patch.dict(os.environ, self.env()):
                generate_job(self.options())
        finally:
            logging.getLogger("vgi_models").removeHandler(handler)
        return log.getvalue()

    def removed(self, instances=None) -> None:
        """What Snakemake does before it runs the job again: every output goes."""
        for instance in instances or self.instances:
            for name in ("video.mp4", "generation.json"):
                (self.run_dir(instance) / name).unlink()
            for path in (self.run_dir(instance) / "denoise").iterdir():
                path.unlink()
            (self.run_dir(instance) / "denoise").rmdir()

    def outputs(self, instance: str) -> dict[str, bytes]:
        run = self.run_dir(instance)
        files = [run / "video.mp4", *sorted((run / "denoise").iterdir())]
        return {path.name: path.read_bytes() for path in files}

    def meta(self, instance: str) -> dict:
        return json.loads((self.run_dir(instance) / "generation.json").read_text())


@pytest.fixture(scope="module")
def alone(specs, tmp_path_factory):
    """instance -> the outputs and generation.json of its own (one-instance) job."""
    made = {}
    for instance in INSTANCES:
        job = Batch(tmp_path_factory.mktemp(instance), specs, [instance])
        job.run()
        made[instance] = job.outputs(instance), job.meta(instance)
    return made


def test_a_batch_loads_once_and_makes_each_instance_as_its_own_job(specs, alone, tmp_path):
    job = Batch(tmp_path, specs)
    log = job.run()
    assert log.count(f"loaded {MODEL} in ") == 1
    for instance in INSTANCES:
        outputs, meta = alone[instance]
        assert job.outputs(instance) == outputs  # the video and every checkpoint
        made = job.meta(instance)
        assert made.keys() == meta.keys()
        machine = ("seconds", "peak_memory_mb", "attempts", "image")
        assert {k: v for k, v in made.items() if k not in machine} == {
            k: v for k, v in meta.items() if k not in machine
        }
    assert len({job.meta(i)["seconds"]["load"] for i in INSTANCES}) == 1

    # Run again (Snakemake removed every output first) with one prompt edited: that
    # instance alone is made; the others are put back as they were (the kept hard links)
    edited = Batch(tmp_path, specs, prompts=[PROMPT, "sort the bars"])
    before = {i: job.meta(i) for i in INSTANCES}
    job.removed()
    log = edited.run()
    assert log.count(f"loaded {MODEL} in ") == 1 and log.count(": restored from ") == 1
    first = INSTANCES[0]
    assert job.outputs(first) == alone[first][0] and job.meta(first) == before[first]
    assert (job.run_dir(first) / "video.mp4").stat().st_nlink == 2  # and its kept copy: one file
    assert job.meta(INSTANCES[1])["prompt"] == "sort the bars"
    assert job.outputs(INSTANCES[1])["video.mp4"] != alone[INSTANCES[1]][0]["video.mp4"]


def test_a_batch_cut_off_mid_way_resumes_where_it_was(specs, alone, tmp_path, monkeypatch):
    """SIGTERM (SLURM's before a preemption) after step 23 of the second instance: the job
    saves that step and exits, the first instance kept; the rerun (its outputs removed
    first) restores the first and resumes the second at step 23, both byte for byte as
    their own jobs make them."""
    stepped, seen = Trajectory._stepped, []

    def stepped_then_signalled(self, pipe, i, t, tensors):
        reply = stepped(self, pipe, i, t, tensors)
        seen.extend([] if self in seen else [self])
        if seen.index(self) == 1 and self.step == 23:
            os.kill(os.getpid(), signal.SIGTERM)
        return reply

    job = Batch(tmp_path, specs)
    with monkeypatch.context() as patch, pytest.raises(SystemExit) as cut:
        patch.setattr(Trajectory, "_stepped", stepped_then_signalled)
        job.run()
    assert cut.value.code == 128 + signal.SIGTERM
    assert (job.run_dir(INSTANCES[0]) / "generation.json").exists()
    assert not (job.run_dir(INSTANCES[1]) / "video.mp4").exists()
    job.removed(INSTANCES[:1])  # Snakemake removes a failed job's outputs

    log = job.run()
    assert log.count(": restored from ") == 1 and "resumed at step 23 of 40\n" in log
    for instance in INSTANCES:
        assert job.outputs(instance) == alone[instance][0]
    attempts = [(a["from_step"], a["steps_computed"]) for a in job.meta(INSTANCES[1])["attempts"]]
    assert attempts == [(0, 23), (23, 17)]
