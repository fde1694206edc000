"""Generation with denoising checkpoints, for every family, on tiny models built from config."""

from __future__ import annotations

import json

import decord
import numpy as np
import pytest
import torch
from PIL import Image

from vgi_models.generate import generate
from vgi_models.hooks import CheckpointRecorder
from vgi_models.registry import load_registry

STEPS = (1, 2, 3, 4, 10, 20, 40)
TINY = ["tiny_wan22", "tiny_wan21", "tiny_hunyuan15", "tiny_ltx23"]


def run_pipeline(spec, image, steps=STEPS, output_type="latent", pipe=None):
    """The tiny pipeline, recorded at `steps`; returns (pipe, recorder, output)."""
    torch.set_num_threads(1)
    pipe = pipe or spec.build()
    with torch.inference_mode(), CheckpointRecorder(pipe.scheduler, steps, keep_xt=True) as rec:
        out = pipe(
            image=Image.open(image).convert("RGB"),
            prompt="move the green dot to the red dot",
            generator=torch.Generator().manual_seed(spec.generation["seed"]),
            output_type=output_type,
            **spec.module.call_kwargs(spec.generation),
        )
    return pipe, rec, out


@pytest.fixture(scope="module", params=TINY)
def tiny(request, specs, example_image):
    """(spec, pipe, recorder, latent output) of one recorded tiny run per family."""
    spec = specs[request.param]
    return spec, *run_pipeline(spec, example_image)


def test_last_checkpoint_is_the_final_latent(tiny):
    spec, pipe, rec, out = tiny
    family = spec.module
    final = family.final_latents(pipe, out)
    assert sorted(rec.checkpoints) == list(STEPS)
    assert rec.calls == spec.steps
    for kind in ("x0", "xt"):
        last = family.checkpoint_latents(pipe, getattr(rec.checkpoints[40], kind), final)
        assert torch.equal(last, final)  # exact, not approximately
    assert not torch.equal(family.checkpoint_latents(pipe, rec.checkpoints[20].x0, final), final)


def test_decoded_last_checkpoint_is_the_pipelines_own_video(tiny, example_image):
    spec, pipe, rec, out = tiny
    family = spec.module
    _, _, own = run_pipeline(spec, example_image, steps=(), output_type="np")
    last = family.checkpoint_latents(pipe, rec.checkpoints[40].x0, family.final_latents(pipe, out))
    own_frames = (own.frames[0] * 255).astype(np.uint8)
    np.testing.assert_array_equal(family.decode(pipe, last), own_frames)


def test_same_seed_gives_identical_latents(tiny, example_image):
    spec, _, _, out = tiny
    _, _, again = run_pipeline(spec, example_image)
    assert torch.equal(spec.module.final_latents(None, again), spec.module.final_latents(None, out))


def test_weights_load_from_a_local_directory(tiny, example_image, tmp_path, registry):
    """The real-weight path (`from_pretrained`, offline) on the tiny weights saved to disk."""
    spec, pipe, _, out = tiny
    pipe.save_pretrained(tmp_path)
    entry = registry[spec.key] | {"source": str(tmp_path)}
    loaded = load_registry({"saved": entry})["saved"].build()
    for name, component in pipe.components.items():
        if isinstance(component, torch.nn.Module):
            mine, theirs = component.state_dict(), loaded.components[name].state_dict()
            assert mine.keys() == theirs.keys(), name
            assert all(torch.equal(mine[k], theirs[k]) for k in mine), name
    settings = {k: v for k, v in pipe.scheduler.config.items() if not k.startswith("_")}
    assert settings.items() <= loaded.scheduler.config.items()
    _, _, again = run_pipeline(spec, example_image, pipe=loaded)
    assert again.frames.shape == out.frames.shape


def test_generate_writes_video_checkpoints_and_metadata(tiny, example_image, tmp_path):
    spec = tiny[0]
    torch.set_num_threads(1)
    meta = generate(spec, str(example_image), "solve it", list(STEPS), "both", tmp_path / "a")
    generate(spec, str(example_image), "solve it", list(STEPS), "both", tmp_path / "b")
    gen = spec.generation
    video = decord.VideoReader(str(tmp_path / "a" / "video.mp4"))
    assert (len(video), *video[0].shape) == (gen["num_frames"], gen["height"], gen["width"], 3)
    for step in STEPS:
        for name in (f"step{step:02d}.mp4", f"step{step:02d}_xt.mp4"):
            assert len(decord.VideoReader(str(tmp_path / "a" / "denoise" / name))) == len(video)
    assert json.loads((tmp_path / "a" / "generation.json").read_text()) == meta
    assert meta["seed"] == gen["seed"] and meta["settings"]["generation"] == gen
    assert set(meta["seconds"]) == {"load", "denoise", "decode"}
    assert meta["versions"]["diffusers"] and meta["peak_memory_mb"]["cpu_rss"] > 0
    # the last checkpoint is the final video; same seed, same bytes
    last = (tmp_path / "a" / "denoise" / "step40.mp4").read_bytes()
    assert last == (tmp_path / "a" / "video.mp4").read_bytes()
    for name in ("video.mp4", "denoise/step01.mp4", "denoise/step10_xt.mp4"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
