"""Generation with denoising checkpoints on tiny models built from config."""

from __future__ import annotations

import json

import decord
import numpy as np
import pytest
import torch
from PIL import Image

from vgi_models.generate import generate
from vgi_models.hooks import CheckpointRecorder

STEPS = (1, 2, 3, 4, 10, 20, 40)


def run_pipeline(spec, image, steps=STEPS, output_type="latent"):
    """The tiny pipeline, recorded at `steps`; returns (pipe, recorder, output)."""
    torch.set_num_threads(1)
    pipe = spec.build()
    with torch.inference_mode(), CheckpointRecorder(pipe.scheduler, steps, keep_xt=True) as rec:
        out = pipe(
            image=Image.open(image).convert("RGB"),
            prompt="move the green dot to the red dot",
            generator=torch.Generator().manual_seed(spec.generation["seed"]),
            output_type=output_type,
            **spec.module.call_kwargs(spec.generation),
        )
    return pipe, rec, out


@pytest.fixture(scope="module")
def wan22_run(specs, example_image):
    return run_pipeline(specs["tiny_wan22"], example_image)


def test_last_checkpoint_is_the_final_latent(specs, wan22_run):
    pipe, rec, out = wan22_run
    family = specs["tiny_wan22"].module
    final = family.final_latents(pipe, out)
    assert sorted(rec.checkpoints) == list(STEPS)
    last = family.checkpoint_latents(pipe, rec.checkpoints[40].x0, final)
    assert torch.equal(last, final)  # exact, not approximately
    assert torch.equal(rec.checkpoints[40].xt, final)
    assert not torch.equal(rec.checkpoints[20].x0, final)


def test_decoded_last_checkpoint_is_the_pipelines_own_video(specs, wan22_run, example_image):
    pipe, rec, out = wan22_run
    spec = specs["tiny_wan22"]
    _, _, own = run_pipeline(spec, example_image, steps=(), output_type="np")
    own_frames = (own.frames[0] * 255).astype(np.uint8)
    np.testing.assert_array_equal(spec.module.decode(pipe, rec.checkpoints[40].x0), own_frames)


def test_wan22_switches_experts_at_the_boundary(specs, example_image):
    spec = specs["tiny_wan22"]
    pipe = spec.build()
    calls = {"transformer": 0, "transformer_2": 0}
    for name in calls:
        getattr(pipe, name).register_forward_hook(
            lambda *_, name=name: calls.__setitem__(name, calls[name] + 1)
        )
    timesteps = []
    with torch.inference_mode():
        pipe(
            image=Image.open(example_image).convert("RGB"),
            prompt="x",
            generator=torch.Generator().manual_seed(0),
            output_type="latent",
            callback_on_step_end=lambda p, i, t, kw: timesteps.append(float(t)) or {},
            **spec.module.call_kwargs(spec.generation),
        )
    high = sum(t >= spec.generation["boundary_ratio"] * 1000 for t in timesteps)
    assert 0 < high < len(timesteps)
    assert calls == {"transformer": 2 * high, "transformer_2": 2 * (len(timesteps) - high)}


def test_generate_writes_video_checkpoints_and_metadata(specs, example_image, tmp_path):
    spec = specs["tiny_wan22"]
    torch.set_num_threads(1)
    meta = generate(spec, str(example_image), "solve it", list(STEPS), "both", tmp_path / "a")
    generate(spec, str(example_image), "solve it", list(STEPS), "both", tmp_path / "b")
    gen = spec.generation
    video = decord.VideoReader(str(tmp_path / "a" / "video.mp4"))
    assert (len(video), *video[0].shape) == (gen["num_frames"], gen["height"], gen["width"], 3)
    for step in STEPS:
        for name in (f"step{step:02d}.mp4", f"step{step:02d}_xt.mp4"):
            assert len(decord.VideoReader(str(tmp_path / "a" / "denoise" / name))) == len(video)
    written = json.loads((tmp_path / "a" / "generation.json").read_text())
    assert written == meta
    assert meta["seed"] == gen["seed"] and meta["settings"]["generation"] == gen
    assert set(meta["seconds"]) == {"load", "denoise", "decode"}
    assert meta["versions"]["diffusers"] and meta["peak_memory_mb"]["cpu_rss"] > 0
    # the last checkpoint is the final video; same seed, same bytes
    last = (tmp_path / "a" / "denoise" / "step40.mp4").read_bytes()
    assert last == (tmp_path / "a" / "video.mp4").read_bytes()
    for name in ("video.mp4", "denoise/step01.mp4", "denoise/step10_xt.mp4"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()


def test_same_seed_gives_identical_latents(specs, example_image, wan22_run):
    pipe, _, out = wan22_run
    _, _, again = run_pipeline(specs["tiny_wan22"], example_image)
    assert torch.equal(again.frames, out.frames)
