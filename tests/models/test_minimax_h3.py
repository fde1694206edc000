"""MiniMax-H3 (`minimax_h3`) on its tiny random modular pipeline: checkpoints decoded as the
pipeline decodes its video, the last one that video bit for bit, and a job cut off mid-trajectory
resuming to the same bytes."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from diffusers.modular_pipelines import MiniMaxH3Blocks
from PIL import Image

from tests.models.test_resumable import Job
from tests.support.pipelines import PROMPT, run_pipeline
from vgi_models.hooks import clean_estimator

STEPS = 4  # of the recorded run (the registry's 40 are the study's)
CHECKPOINTS = (1, 2, 4)


@pytest.fixture(scope="module")
def tiny(specs, example_image):
    """(spec at STEPS steps, pipe, recorder, latent output) of one recorded run."""
    spec = specs["tiny_minimax_h3"].with_generation(num_inference_steps=STEPS)
    return spec, *run_pipeline(spec, example_image, CHECKPOINTS)


def test_the_scheduler_x0_is_its_own(tiny):
    """MiniMax-H3's velocity points at the data: x0 = x_t + (1 - t) v, as its `step` has it."""
    pipe = tiny[1]
    x, v, t = torch.randn(6, 16), torch.randn(6, 16), torch.tensor(0.3)
    torch.testing.assert_close(clean_estimator(pipe.scheduler)(v, t, x), x + 0.7 * v)


def test_checkpoints_at_the_chosen_steps_end_in_the_pipelines_own_video(tiny, example_image):
    """The last x0 is the final latent exactly, and decoded it is the video the unmodified
    modular pipeline makes (its decode blocks, `output_type="np"`), bit for bit."""
    spec, pipe, rec, out = tiny
    family = spec.pipeline_family
    gen = spec.generation
    assert sorted(rec.checkpoints) == list(CHECKPOINTS) and rec.calls == STEPS
    last = family.checkpoint_latents(pipe, rec.checkpoints[STEPS].x0, out.frames)
    assert torch.equal(last, out.frames)
    earlier = family.checkpoint_latents(pipe, rec.checkpoints[2].x0, out.frames)
    assert earlier.shape == last.shape and not torch.equal(earlier, last)

    own = MiniMaxH3Blocks().init_pipeline()
    own.update_components(**pipe.modular.components)
    state = own(
        image=Image.open(example_image).convert("RGB"),
        prompt=PROMPT,
        generator=torch.Generator().manual_seed(gen["seed"]),
        output_type="np",
        **family.call_kwargs(gen),
    )
    video = (state.get("videos")[0] * 255).astype(np.uint8)
    frames = family.decode(pipe, last)
    assert frames.shape == (gen["num_frames"], gen["height"], gen["width"], 3)
    np.testing.assert_array_equal(frames, video)
    waveform, rate = family.final_audio(pipe, out)
    torch.testing.assert_close(waveform, state.get("audio")[0], rtol=0, atol=0)
    assert rate == state.get("sampling_rate")


def test_a_job_killed_mid_trajectory_resumes_to_the_same_bytes(specs, tmp_path_factory):
    """Killed after step 23 (saved at 20), the job resumes both schedulers and both streams
    of packed rows and writes the video and checkpoints of the uncut job, byte for byte."""
    reference = Job(tmp_path_factory.mktemp("uncut"), specs, "tiny_minimax_h3")
    assert "resumed" not in reference.run() and not reference.states()

    job = Job(tmp_path_factory.mktemp("cut"), specs, "tiny_minimax_h3")
    killed = job.cut_off((1, 23), save_every=5)
    assert killed.returncode == -9, killed.stderr[-3000:]
    assert "saved the state at step 20 of 40\n" in killed.stderr
    assert "resumed at step 20 of 40\n" in job.run()
    assert job.outputs() == reference.outputs()
    attempts = [(a["from_step"], a["steps_computed"]) for a in job.meta()["attempts"]]
    assert attempts == [(0, 20), (20, 20)] and not job.state_dir.exists()
