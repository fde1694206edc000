"""LTX-2.3 (video + audio) generation and denoising checkpoints on a tiny model."""

from __future__ import annotations

import decord
import numpy as np
import pytest
import torch
import yaml
from PIL import Image

from vgi_models import registry
from vgi_models.generate import generate
from vgi_models.hooks import CheckpointRecorder

STEPS = (1, 2, 3, 4, 10, 20, 40)
ENTRY = """
tiny_ltx23:
  family: ltx23
  source: tiny
  dtype: float32
  generation:
    height: 32
    width: 64
    num_frames: 9
    fps: 24
    num_inference_steps: 40
    guidance_scale: 3.0
    stg_scale: 1.0
    stg_blocks: [1]  # the tiny transformer has 2 blocks
    modality_scale: 3.0
    guidance_rescale: 0.7
    seed: 0
    max_sequence_length: 32
  resources: {gpu: 0, mem_mb: 2000, runtime: 15}
"""


@pytest.fixture(scope="module")
def spec():
    # the lead registers the family in registry.FAMILIES; until then, patch it in for these tests
    with pytest.MonkeyPatch.context() as mp:
        mp.setitem(registry.FAMILIES, "ltx23", "vgi_models.families.ltx23")
        yield registry.load_registry(yaml.safe_load(ENTRY))["tiny_ltx23"]


def run_pipeline(spec, image, steps=STEPS, output_type="latent", record=True):
    """The tiny pipeline, recorded at `steps`; returns (pipe, recorder or None, output)."""
    torch.set_num_threads(1)
    pipe = spec.build()
    kwargs = dict(
        image=Image.open(image).convert("RGB"),
        prompt="move the green dot to the red dot",
        generator=torch.Generator().manual_seed(spec.generation["seed"]),
        output_type=output_type,
        **spec.module.call_kwargs(spec.generation),
    )
    with torch.inference_mode():
        if not record:
            return pipe, None, pipe(**kwargs)
        with CheckpointRecorder(pipe.scheduler, steps, keep_xt=True) as rec:
            return pipe, rec, pipe(**kwargs)


@pytest.fixture(scope="module")
def ltx_run(spec, example_image):
    return run_pipeline(spec, example_image)


def test_last_checkpoint_is_the_final_latent(spec, ltx_run):
    pipe, rec, out = ltx_run
    family = spec.module
    final = family.final_latents(pipe, out)
    assert sorted(rec.checkpoints) == list(STEPS)
    # the scheduler steps frames 1..N only; frame 0 (the image latent) comes from the final latent
    assert rec.checkpoints[40].x0.shape[2] == final.shape[2] - 1
    last = family.checkpoint_latents(pipe, rec.checkpoints[40].x0, final)
    assert torch.equal(last, final)  # exact, not approximately
    assert torch.equal(family.checkpoint_latents(pipe, rec.checkpoints[40].xt, final), final)
    assert not torch.equal(family.checkpoint_latents(pipe, rec.checkpoints[20].x0, final), final)


def test_only_the_video_steps_are_recorded_and_audio_is_untouched(spec, ltx_run, example_image):
    _, rec, out = ltx_run
    assert rec.calls == spec.steps  # the audio stream's scheduler copy steps unrecorded
    _, _, plain = run_pipeline(spec, example_image, record=False)
    # same seed, no recorder: identical video and audio, so no audio step was misrouted
    assert torch.equal(plain.frames, out.frames)
    assert torch.equal(plain.audio, out.audio)


def test_decoded_last_checkpoint_is_the_pipelines_own_video(spec, ltx_run, example_image):
    pipe, rec, out = ltx_run
    family = spec.module
    _, _, own = run_pipeline(spec, example_image, steps=(), output_type="np")
    own_frames = (own.frames[0] * 255).astype(np.uint8)
    last = family.checkpoint_latents(pipe, rec.checkpoints[40].x0, family.final_latents(pipe, out))
    np.testing.assert_array_equal(family.decode(pipe, last), own_frames)


def test_stg_blocks_must_exist_in_the_transformer(spec):
    generation = spec.generation | {"stg_blocks": [28]}
    with pytest.raises(ValueError, match="stg_blocks"):
        spec.module.build_tiny(spec.family, generation)


def test_generate_writes_video_and_checkpoints(spec, example_image, tmp_path):
    torch.set_num_threads(1)
    meta = generate(spec, str(example_image), "solve it", list(STEPS), "both", tmp_path)
    gen = spec.generation
    video = decord.VideoReader(str(tmp_path / "video.mp4"))
    assert (len(video), *video[0].shape) == (gen["num_frames"], gen["height"], gen["width"], 3)
    assert meta["frames"] == gen["num_frames"]
    for step in STEPS:
        for name in (f"step{step:02d}.mp4", f"step{step:02d}_xt.mp4"):
            assert len(decord.VideoReader(str(tmp_path / "denoise" / name))) == len(video)
    assert (tmp_path / "denoise" / "step40.mp4").read_bytes() == (
        tmp_path / "video.mp4"
    ).read_bytes()
