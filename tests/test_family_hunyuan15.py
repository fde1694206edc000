"""HunyuanVideo-1.5 I2V: denoising checkpoints and decoding on a tiny model built from config."""

from __future__ import annotations

import decord
import numpy as np
import pytest
import torch
from PIL import Image

import vgi_models.registry
from vgi_models.generate import generate
from vgi_models.hooks import CheckpointRecorder
from vgi_models.registry import load_registry

STEPS = (1, 2, 3, 4, 10, 20, 40)
ENTRY = {
    "family": "hunyuan15",
    "source": "tiny",
    "dtype": "float32",
    "generation": {
        "height": 64,
        "width": 112,
        "num_frames": 9,
        "fps": 24,
        "num_inference_steps": 40,
        "guidance_scale": 6.0,
        "flow_shift": 7.0,
        "seed": 0,
        "max_sequence_length": 32,
    },
}


@pytest.fixture(scope="module", autouse=True)
def hunyuan_family():
    """Registers the family until the lead adds it to `registry.FAMILIES`."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setitem(vgi_models.registry.FAMILIES, "hunyuan15", "vgi_models.families.hunyuan15")
        yield


@pytest.fixture(scope="module")
def spec():
    return load_registry({"tiny_hunyuan15": ENTRY})["tiny_hunyuan15"]


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
def hunyuan_run(spec, example_image):
    return run_pipeline(spec, example_image)


def test_settings_reach_the_pipeline(spec, hunyuan_run):
    pipe, _, out = hunyuan_run
    gen = spec.generation
    assert pipe.scheduler.config.shift == gen["flow_shift"]
    assert pipe.guider.guidance_scale == gen["guidance_scale"]
    assert pipe.tokenizer_max_length == gen["max_sequence_length"]
    assert not pipe.vae.use_tiling
    assert spec.module.build_tiny("hunyuan15", gen | {"vae_tiling": True}).vae.use_tiling
    # 9 frames -> 3 latent frames (temporal x4); 64 x 112 px -> 4 x 7 latents (spatial x16)
    assert out.frames.shape == (1, 4, 3, 4, 7)


def test_a_size_without_a_bucket_is_refused(spec):
    with pytest.raises(ValueError, match=r"makes 96x64 \(not 112x60\)"):
        spec.module.build_tiny("hunyuan15", spec.generation | {"height": 60})


def test_load_applies_the_settings_to_saved_weights(spec, hunyuan_run, tmp_path):
    hunyuan_run[0].save_pretrained(tmp_path)
    gen = spec.generation | {"flow_shift": 5.0, "guidance_scale": 3.0}
    entry = ENTRY | {"source": str(tmp_path), "generation": gen}
    pipe = load_registry({"saved": entry})["saved"].build()
    assert (pipe.scheduler.config.shift, pipe.guider.guidance_scale) == (5.0, 3.0)
    assert pipe.transformer.dtype == torch.float32
    assert pipe.video_processor.calculate_default_height_width(360, 640, pipe.target_size) == (
        gen["height"],
        gen["width"],
    )


def test_last_checkpoint_is_the_final_latent(spec, hunyuan_run):
    pipe, rec, out = hunyuan_run
    family = spec.module
    final = family.final_latents(pipe, out)
    assert sorted(rec.checkpoints) == list(STEPS)
    last = family.checkpoint_latents(pipe, rec.checkpoints[40].x0, final)
    assert torch.equal(last, final)  # exact, not approximately
    assert torch.equal(rec.checkpoints[40].xt, final)
    assert not torch.equal(rec.checkpoints[20].x0, final)


def test_decoded_last_checkpoint_is_the_pipelines_own_video(spec, hunyuan_run, example_image):
    pipe, rec, _ = hunyuan_run
    _, _, own = run_pipeline(spec, example_image, steps=(), output_type="np")
    own_frames = (own.frames[0] * 255).astype(np.uint8)
    np.testing.assert_array_equal(spec.module.decode(pipe, rec.checkpoints[40].x0), own_frames)


def test_generate_writes_video_and_checkpoints(spec, example_image, tmp_path):
    torch.set_num_threads(1)
    prompt = 'write "EXIT" at the end of the maze'  # quoted text takes the ByT5 glyph path
    meta = generate(spec, str(example_image), prompt, list(STEPS), "x0", tmp_path)
    gen = spec.generation
    video = decord.VideoReader(str(tmp_path / "video.mp4"))
    assert (len(video), *video[0].shape) == (gen["num_frames"], gen["height"], gen["width"], 3)
    assert (meta["frames"], meta["height"], meta["width"]) == (9, 64, 112)
    written = sorted(p.name for p in (tmp_path / "denoise").iterdir())
    assert written == [f"step{s:02d}.mp4" for s in STEPS]
    for name in written:
        assert len(decord.VideoReader(str(tmp_path / "denoise" / name))) == len(video)
    last = (tmp_path / "denoise" / "step40.mp4").read_bytes()
    assert last == (tmp_path / "video.mp4").read_bytes()


def test_same_seed_gives_identical_latents(spec, example_image, hunyuan_run):
    _, _, out = hunyuan_run
    _, _, again = run_pipeline(spec, example_image)
    assert torch.equal(again.frames, out.frames)
