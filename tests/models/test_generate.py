"""Generation with denoising checkpoints, for every family, on tiny models built from config."""

from __future__ import annotations

import json

import decord
import numpy as np
import pytest
import torch

from tests.support.pipelines import STEPS, run_pipeline
from vgi_models.generate import generate
from vgi_models.registry import load_registry

TINY = ["tiny_wan22", "tiny_wan21", "tiny_hunyuan15", "tiny_ltx23"]
NAMES = {
    "x0": [f"step{s:02d}.mp4" for s in STEPS],
    "xt": [f"step{s:02d}_xt.mp4" for s in STEPS],
}


@pytest.fixture(scope="module", params=TINY)
def tiny(request, specs, example_image):
    """(spec, pipe, recorder, latent output) of one recorded tiny run per family."""
    spec = specs[request.param]
    return spec, *run_pipeline(spec, example_image, STEPS)


def test_last_checkpoint_is_the_final_latent(tiny):
    spec, pipe, rec, out = tiny
    family = spec.pipeline_family
    final = family.final_latents(pipe, out)
    assert sorted(rec.checkpoints) == list(STEPS)
    assert rec.calls == spec.steps
    for kind in ("x0", "xt"):
        last = family.checkpoint_latents(pipe, getattr(rec.checkpoints[40], kind), final)
        assert torch.equal(last, final)  # exact, not approximately
    assert not torch.equal(family.checkpoint_latents(pipe, rec.checkpoints[20].x0, final), final)


def test_decoded_last_checkpoint_is_the_pipelines_own_video(tiny, example_image):
    spec, pipe, rec, out = tiny
    family = spec.pipeline_family
    _, _, own = run_pipeline(spec, example_image, output_type="np", record=False)
    last = family.checkpoint_latents(pipe, rec.checkpoints[40].x0, family.final_latents(pipe, out))
    own_frames = (own.frames[0] * 255).astype(np.uint8)
    np.testing.assert_array_equal(family.decode(pipe, last), own_frames)


def test_same_seed_gives_identical_latents(tiny, example_image):
    spec, _, _, out = tiny
    # and the recorder changes nothing: this run is not recorded, `tiny`'s is
    _, _, again = run_pipeline(spec, example_image, record=False)
    assert torch.equal(
        spec.pipeline_family.final_latents(None, again),
        spec.pipeline_family.final_latents(None, out),
    )


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
    """decode "both" writes x0 and x_t videos of every step; "x0" and "xt" the same files alone."""
    spec = tiny[0]
    torch.set_num_threads(1)
    prompt = 'write "EXIT" at the end of the maze'  # quoted text: HunyuanVideo-1.5's glyph path
    metas = {
        decode: generate(spec, str(example_image), prompt, list(STEPS), decode, tmp_path / decode)
        for decode in ("both", "x0", "xt")
    }
    gen, meta, run = spec.generation, metas["both"], tmp_path / "both"
    size = (gen["num_frames"], gen["height"], gen["width"])
    video = decord.VideoReader(str(run / "video.mp4"))
    assert (len(video), *video[0].shape) == (*size, 3)
    for name in NAMES["x0"] + NAMES["xt"]:
        assert len(decord.VideoReader(str(run / "denoise" / name))) == len(video)
    assert json.loads((run / "generation.json").read_text()) == meta
    assert (meta["frames"], meta["height"], meta["width"]) == size
    assert meta["seed"] == gen["seed"] and meta["settings"]["generation"] == gen
    assert meta["settings"]["family"] == spec.family
    assert set(meta["seconds"]) == {"load", "denoise", "decode"}
    assert meta["versions"]["diffusers"] and meta["peak_memory_mb"]["cpu_rss"] > 0
    # the last checkpoint is the final video; same seed, same bytes, whatever else is decoded
    for name in ("step40.mp4", "step40_xt.mp4"):
        assert (run / "denoise" / name).read_bytes() == (run / "video.mp4").read_bytes()
    written = {d: sorted(p.name for p in (tmp_path / d / "denoise").iterdir()) for d in metas}
    assert written == {"both": sorted(NAMES["x0"] + NAMES["xt"])} | NAMES
    for decode in ("x0", "xt"):
        for name in ["video.mp4", *(f"denoise/{n}" for n in NAMES[decode])]:
            assert (tmp_path / decode / name).read_bytes() == (run / name).read_bytes(), name
