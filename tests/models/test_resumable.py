"""A generate job cut off mid-trajectory resumes from its saved state and writes the same
bytes as an uninterrupted job: the real entry of rule `generate`, as a process cut off by a
real signal (`tests.support.cut_off` sends it at a chosen step), then run again (here, in
this process, as are the uninterrupted references)."""

from __future__ import annotations

import dataclasses
import errno
import io
import json
import logging
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from unittest import mock

import pytest
import yaml

from tests.support.workflow import EXAMPLES, REPO
from workflow_scripts.generate import generate_job

INSTANCE = "maze_square_lv1_001"
IMAGE = EXAMPLES / "maze_square" / "input_image" / "lv1" / f"{INSTANCE}.png"
STEPS = [2, 20, 40]  # checkpoints before and after every cut below
# model: (stage, step) of the cut, save_every, the steps done at the last save before it
CUTS = {
    "tiny_wan22": ((1, 33), 5, 30),  # past the boundary: the low-noise expert runs
    "tiny_wan21": ((1, 23), 5, 20),
    "tiny_hunyuan15": ((1, 17), 5, 15),
    "tiny_ltx23_two_stage": ((2, 3), 2, 42),  # in stage 2: 40 steps, then 2 of its 3
    "tiny_vbvr_wan22": ((1, 27), 5, 25),
}
TOTAL = {"tiny_ltx23_two_stage": 43}  # steps over all stages; the others 40


class Job:
    """One model's generate job on INSTANCE under `root` (results/ and resume/ inside)."""

    def __init__(self, root: Path, specs, model: str, runtime: dict | None = None, **generation):
        """`runtime`: over the registry's (a copy under `root`, written by `run`)."""
        self.root, self.model, self.runtime = root, model, runtime
        self.registry = REPO / "config" / "models.yaml"
        spec = specs[model]
        if runtime:
            self.registry = root / "models.yaml"
            spec = dataclasses.replace(spec, runtime=spec.runtime | runtime)
        settings = spec.settings()
        settings["generation"] = settings["generation"] | generation
        self.settings = settings | {"denoise": {"steps": STEPS, "decode": "x0"}}
        self.run_dir = root / "results" / model / "maze_square" / INSTANCE
        self.state_dir = root / "resume" / model / "maze_square" / INSTANCE

    def options(self) -> list[str]:
        options = ["--registry", str(self.registry), "--model", self.model]
        options += ["--settings", json.dumps(self.settings), "--threads", "1"]
        options += ["--image", str(IMAGE), "--prompt", "reach the exit"]
        return options + ["--video", str(self.run_dir / "video.mp4")]

    def env(self, save_every: int) -> dict:
        return {"VGI_RESUME_DIR": str(self.root / "resume"), "VGI_SAVE_EVERY": str(save_every)}

    def cut_off(self, cut, signal="KILL", delay=0.0, save_every=5) -> subprocess.CompletedProcess:
        """The job as a process of its own, sent `signal` after step `cut` (stage, step)."""
        command = [sys.executable, "-m", "tests.support.cut_off", *map(str, cut), signal]
        command += [str(delay), "--", *self.options()]
        return subprocess.run(
            command, cwd=REPO, env=os.environ | self.env(save_every), capture_output=True,
            text=True, timeout=300,
        )  # fmt: skip

    def run(self, save_every=5) -> str:
        """The job, uncut, in this process (the same entry); its log lines."""
        if self.runtime:
            entries = yaml.safe_load((REPO / "config" / "models.yaml").read_text())
            entries[self.model]["runtime"] = self.runtime
            self.registry.write_text(yaml.safe_dump({self.model: entries[self.model]}))
        log = io.StringIO()
        handler = logging.StreamHandler(log)
        logging.getLogger("vgi_models").addHandler(handler)
        try:
            with mock.patch.dict(os.environ, self.env(save_every)):
                generate_job(self.options())
        finally:
            logging.getLogger("vgi_models").removeHandler(handler)
        return log.getvalue()

    def outputs(self) -> dict[str, bytes]:
        files = [self.run_dir / "video.mp4", *sorted((self.run_dir / "denoise").iterdir())]
        return {path.name: path.read_bytes() for path in files}

    def meta(self) -> dict:
        return json.loads((self.run_dir / "generation.json").read_text())

    def states(self) -> list[Path]:
        return sorted(self.state_dir.glob("*")) if self.state_dir.exists() else []


@pytest.fixture(scope="module")
def reference(specs, tmp_path_factory):
    """model -> the outputs of its uninterrupted job (run once per module)."""
    made = {}

    def outputs(model: str, **generation) -> dict[str, bytes]:
        name = model + "".join(f"-{k}{v}" for k, v in generation.items())
        if name not in made:
            job = Job(tmp_path_factory.mktemp(name), specs, model, **generation)
            assert "resumed" not in job.run() and not job.states()
            made[name] = job.outputs()
        return made[name]

    return outputs


@pytest.mark.parametrize("model", list(CUTS))
def test_a_job_killed_mid_trajectory_resumes_to_the_same_bytes(model, specs, reference, tmp_path):
    (stage, step), save_every, saved = CUTS[model]
    total, job = TOTAL.get(model, 40), Job(tmp_path, specs, model)
    if model.endswith("wan22"):  # both experts: the cut and the save after the boundary
        pipe = specs[model].build()
        pipe.scheduler.set_timesteps(40)
        boundary = pipe.config.boundary_ratio * pipe.scheduler.config.num_train_timesteps
        assert 0 < sum(int(t >= boundary) for t in pipe.scheduler.timesteps) < saved

    killed = job.cut_off((stage, step), save_every=save_every)
    assert killed.returncode == -9, killed.stderr[-3000:]
    assert len(job.states()) == 1 and job.states()[0].suffix == ".pt"
    in_stage = saved - 40 if stage == 2 else saved
    where = f"step {in_stage} of {3 if stage == 2 else 40}" + (" (stage 2)" if stage == 2 else "")
    assert f"saved the state at {where}\n" in killed.stderr

    assert f"resumed at {where}\n" in job.run(save_every=save_every)
    assert job.outputs() == reference(model)  # video.mp4 and every checkpoint, byte for byte
    meta = job.meta()
    attempts = [(a["from_step"], a["steps_computed"]) for a in meta["attempts"]]
    assert meta["resumed_from_step"] == saved and attempts == [(0, saved), (saved, total - saved)]
    assert all(a["seconds"] > 0 for a in meta["attempts"])
    assert not job.state_dir.exists()
    done_at_kill = step + (40 if stage == 2 else 0)
    computed = done_at_kill + total - saved
    print(f"\n{model}: {computed} steps over both attempts = {total} + {computed - total}")


def test_sigterm_saves_the_step_just_done_and_the_job_exits(specs, reference, tmp_path):
    """SIGTERM lands inside step 21: the state of step 20 (or of 21, were it done first)
    is saved then, with no periodic save due; only the step under way is redone."""
    job = Job(tmp_path, specs, "tiny_hunyuan15")
    cut = job.cut_off((1, 20), signal="TERM", delay=0.01, save_every=1000)
    assert cut.returncode == 143, cut.stderr[-3000:]  # 128 + SIGTERM
    saved = int(re.search(r"saved the state at step (\d+) of 40 on SIGTERM\n", cut.stderr)[1])
    assert saved >= 20 and len(job.states()) == 1

    assert f"resumed at step {saved} of 40\n" in job.run(save_every=1000)
    assert job.outputs() == reference("tiny_hunyuan15")
    attempts = [(a["from_step"], a["steps_computed"]) for a in job.meta()["attempts"]]
    assert attempts == [(0, saved), (saved, 40 - saved)]  # every step done was kept


def test_the_warning_signal_saves_and_the_job_goes_on(specs, reference, tmp_path):
    job = Job(tmp_path, specs, "tiny_hunyuan15")
    warned = job.cut_off((1, 20), signal="URG", save_every=1000)
    assert warned.returncode == 0, warned.stderr[-3000:]
    assert "saved the state at step 20 of 40 on SIGURG\n" in warned.stderr
    assert job.outputs() == reference("tiny_hunyuan15")
    assert job.meta()["resumed_from_step"] is None and not job.state_dir.exists()


def test_a_truncated_or_stale_state_starts_from_step_0(specs, reference, tmp_path):
    """A state cut short (a write the node lost), or one saved for other settings (a guidance
    scale; VAE tiling, an approximate runtime value): each is ignored with a log line naming
    what changed, and the job computes all 40 steps into a correct video."""
    job = Job(tmp_path / "truncated", specs, "tiny_hunyuan15")
    assert job.cut_off((1, 12)).returncode == -9
    changed = Job(tmp_path / "changed", specs, "tiny_hunyuan15", guidance_scale=4.0)
    shutil.copytree(job.root, changed.root)  # the same state, now under other settings
    tiled = Job(tmp_path / "tiled", specs, "tiny_hunyuan15", runtime={"vae_tiling": True})
    shutil.copytree(job.root, tiled.root)
    (state,) = job.states()
    state.write_bytes(state.read_bytes()[: state.stat().st_size // 2])

    log = job.run()
    assert re.search(rf"ignoring {re.escape(str(state))} \(.+\); starting from step 0\n", log)
    assert job.outputs() == reference("tiny_hunyuan15")
    assert job.meta()["resumed_from_step"] is None
    assert [a["steps_computed"] for a in job.meta()["attempts"]] == [40]

    log = changed.run()
    why = "saved for other settings: settings.generation.guidance_scale 6.0 -> 4.0"
    assert f"({why}); removed\n" in log and "resumed" not in log
    assert changed.outputs() == reference("tiny_hunyuan15", guidance_scale=4.0)
    assert changed.outputs()["video.mp4"] != reference("tiny_hunyuan15")["video.mp4"]
    assert [a["steps_computed"] for a in changed.meta()["attempts"]] == [40]

    log = tiled.run()
    why = "saved for other settings: settings.runtime.vae_tiling None -> True (an approximate"
    assert why in log
    assert "resumed" not in log and [a["steps_computed"] for a in tiled.meta()["attempts"]] == [40]
    assert tiled.meta()["settings"]["runtime"] == {"vae_tiling": True}


def test_a_state_that_cannot_be_read_is_kept_and_the_job_stops(specs, tmp_path):
    """A read error may pass (a disk, a mount): the job fails with it and the state stays for
    the rerun, which resumes it, never discarded as another job's. The state here reads as a
    failing disk does: its name links to the process's memory file, whose read at offset 0
    raises EIO."""
    job = Job(tmp_path, specs, "tiny_hunyuan15")
    assert job.cut_off((1, 12)).returncode == -9
    (state,) = job.states()
    saved = state.read_bytes()
    state.unlink()
    state.symlink_to("/proc/self/mem")
    with pytest.raises(OSError) as failed:
        job.run()
    assert failed.value.errno == errno.EIO
    assert job.states() == [state] and state.is_symlink()
    assert not (job.run_dir / "video.mp4").exists()
    state.unlink()  # the disk is back
    state.write_bytes(saved)
    assert "resumed at step 10 of 40\n" in job.run()
