"""Wan2.1-I2V (one transformer, CLIP image encoder) on a tiny model built from config."""

from __future__ import annotations

import json

import decord
import numpy as np
import pytest
import torch
from PIL import Image

from vgi_models.families import wan
from vgi_models.generate import generate
from vgi_models.hooks import CheckpointRecorder
from vgi_models.registry import load_registry

STEPS = (1, 2, 3, 4, 10, 20, 40)
TINY_WAN21 = {
    "family": "wan21",
    "source": "tiny",
    "dtype": "float32",
    "generation": {
        "height": 144,
        "width": 256,
        "num_frames": 9,
        "fps": 16,
        "num_inference_steps": 40,
        "guidance_scale": 5.0,
        "flow_shift": 5.0,
        "seed": 0,
    },
}


@pytest.fixture(scope="module")
def spec():
    return load_registry({"tiny_wan21": TINY_WAN21})["tiny_wan21"]


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


@pytest.fixture(scope="module")
def wan21_run(spec, example_image):
    return run_pipeline(spec, example_image)


def test_tiny_wan21_is_the_wan21_architecture(spec):
    pipe = spec.build()
    assert pipe.transformer_2 is None and pipe.config.boundary_ratio is None
    assert pipe.image_encoder is not None and pipe.image_processor is not None
    config = pipe.transformer.config
    assert config.image_dim == pipe.image_encoder.config.hidden_size
    assert config.added_kv_proj_dim == config.num_attention_heads * config.attention_head_dim
    assert sum(p.numel() for p in pipe.components["transformer"].parameters()) < 100_000


def test_last_checkpoint_is_the_final_latent(spec, wan21_run):
    pipe, rec, out = wan21_run
    final = spec.module.final_latents(pipe, out)
    assert sorted(rec.checkpoints) == list(STEPS)
    last = spec.module.checkpoint_latents(pipe, rec.checkpoints[40].x0, final)
    assert torch.equal(last, final)  # exact, not approximately
    assert torch.equal(rec.checkpoints[40].xt, final)
    assert not torch.equal(rec.checkpoints[20].x0, final)


def test_decoded_last_checkpoint_is_the_pipelines_own_video(spec, wan21_run, example_image):
    pipe, rec, _ = wan21_run
    _, _, own = run_pipeline(spec, example_image, steps=(), output_type="np", pipe=pipe)
    own_frames = (own.frames[0] * 255).astype(np.uint8)
    np.testing.assert_array_equal(spec.module.decode(pipe, rec.checkpoints[40].x0), own_frames)


def test_image_tokens_reach_the_transformer(spec, example_image):
    """The CLIP features enter every step: the image encoder runs once, the transformer
    gets them (text padded to the 512 tokens Wan2.1's attention assumes) in both CFG passes."""
    pipe = spec.build()
    seen = []
    pipe.image_encoder.register_forward_hook(lambda *_: seen.append("clip"))
    pipe.transformer.register_forward_pre_hook(
        lambda _, args, kwargs: seen.append(
            (kwargs["encoder_hidden_states"].shape[1], kwargs["encoder_hidden_states_image"].shape)
        ),
        with_kwargs=True,
    )
    generation = spec.generation | {"num_inference_steps": 2}
    with torch.inference_mode():
        pipe(
            image=Image.open(example_image).convert("RGB"),
            prompt="x",
            generator=torch.Generator().manual_seed(0),
            output_type="latent",
            **spec.module.call_kwargs(generation),
        )
    tokens = (pipe.image_encoder.config.image_size // pipe.image_encoder.config.patch_size) ** 2 + 1
    image_shape = torch.Size([1, tokens, pipe.image_encoder.config.hidden_size])
    assert seen == ["clip"] + [(512, image_shape)] * 4


@pytest.mark.parametrize(
    "extra, message",
    [
        ({"max_sequence_length": 64}, "512"),
        ({"boundary_ratio": 0.9}, "boundary_ratio"),
        ({"guidance_scale_2": 3.5}, "guidance_scale_2"),
    ],
)
def test_settings_wan21_cannot_honour_are_rejected(spec, extra, message):
    with pytest.raises(ValueError, match=message):
        wan.build_tiny("wan21", spec.generation | extra)


def test_load_reads_a_saved_pipeline_in_mixed_precision(spec, example_image, tmp_path):
    """The real-weight loader on a saved tiny pipeline: transformer and text encoder in the
    entry's dtype, VAE and CLIP image encoder in float32, and it runs and decodes."""
    spec.build().save_pretrained(tmp_path)
    pipe = wan.load(str(tmp_path), spec.generation, torch.bfloat16)
    assert (pipe.transformer.dtype, pipe.text_encoder.dtype) == (torch.bfloat16, torch.bfloat16)
    assert (pipe.vae.dtype, pipe.image_encoder.dtype) == (torch.float32, torch.float32)
    assert pipe.transformer_2 is None and pipe.config.boundary_ratio is None
    generation = spec.generation | {"num_inference_steps": 2}
    with torch.inference_mode():
        out = pipe(
            image=Image.open(example_image).convert("RGB"),
            prompt="x",
            generator=torch.Generator().manual_seed(0),
            output_type="latent",
            **spec.module.call_kwargs(generation),
        )
    frames = spec.module.decode(pipe, spec.module.final_latents(pipe, out))
    assert frames.shape == (9, 144, 256, 3) and frames.dtype == np.uint8


def test_generate_writes_video_checkpoints_and_metadata(spec, example_image, tmp_path):
    torch.set_num_threads(1)
    meta = generate(spec, str(example_image), "solve it", list(STEPS), "x0", tmp_path)
    gen = spec.generation
    video = decord.VideoReader(str(tmp_path / "video.mp4"))
    assert (len(video), *video[0].shape) == (gen["num_frames"], gen["height"], gen["width"], 3)
    written = sorted(p.name for p in (tmp_path / "denoise").iterdir())
    assert written == [f"step{s:02d}.mp4" for s in STEPS]
    for name in written:
        assert len(decord.VideoReader(str(tmp_path / "denoise" / name))) == len(video)
    assert json.loads((tmp_path / "generation.json").read_text()) == meta
    assert meta["settings"]["family"] == "wan21" and meta["frames"] == gen["num_frames"]
    last = (tmp_path / "denoise" / "step40.mp4").read_bytes()
    assert last == (tmp_path / "video.mp4").read_bytes()


def test_same_seed_gives_identical_latents(spec, example_image, wan21_run):
    _, _, out = wan21_run
    _, _, again = run_pipeline(spec, example_image)
    assert torch.equal(again.frames, out.frames)
