"""What only one family does, on the tiny models of config/models.yaml; the checks every family
shares are in test_generate.py."""

from __future__ import annotations

import json
import subprocess
import sys

import av
import decord
import numpy as np
import pytest
import torch
import yaml
from diffusers.models.transformers.transformer_hunyuan_video15 import (
    HunyuanVideo15AttnProcessor2_0,
)
from torch.utils._python_dispatch import TorchDispatchMode

from tests.support.pipelines import STEPS, run_pipeline
from tests.support.workflow import REPO
from vgi_models.families import FAMILIES
from vgi_models.families.hunyuan15_attention import PrefixAttnProcessor, use_prefix_attention
from vgi_models.generate import generate
from vgi_models.image_families import IMAGE_FAMILIES
from vgi_models.registry import load_registry


def test_the_family_map_loads_no_torch_and_no_tiny_builder():
    """The workflow reads the families while building its DAG: no torch; and the tiny builders
    import their family module, never the reverse: real weights load without them."""
    code = "import json, sys\nfrom vgi_models.families import FAMILIES\n"
    code += "print(json.dumps(sorted(m for m in sys.modules if m.startswith(('torch', 'vgi_')))))"
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True
    )
    loaded = set(json.loads(result.stdout))
    modules = {type(family).__module__ for family in FAMILIES.values()}
    assert loaded >= modules
    assert not {m for m in loaded if m.startswith("torch") or m.endswith("_tiny")}


def test_the_schema_names_every_family():
    """A registry `family` is a key of `FAMILIES` or of `IMAGE_FAMILIES` (the schema lists
    them for the user), an image family only with `output: image`."""
    schema = yaml.safe_load((REPO / "config/schemas/models.schema.yaml").read_text())
    model = schema["$defs"]["model"]
    assert model["properties"]["family"]["enum"] == [*FAMILIES, *IMAGE_FAMILIES]
    local = next(rule["then"] for rule in model["allOf"] if "family" in rule["then"]["required"])
    assert local["then"]["properties"]["family"]["enum"] == list(IMAGE_FAMILIES)
    assert local["else"]["properties"]["family"]["enum"] == list(FAMILIES)


# Wan2.2: two experts


def test_wan22_switches_experts_at_the_boundary(specs, example_image):
    """`transformer` denoises the timesteps at or above the boundary, `transformer_2` the rest,
    each called twice a step (conditional and unconditional)."""
    spec = specs["tiny_wan22"]
    pipe = spec.build()
    seen = []
    for name in ("transformer", "transformer_2"):
        getattr(pipe, name).register_forward_pre_hook(
            lambda _, args, kwargs, name=name: seen.append((name, float(kwargs["timestep"][0]))),
            with_kwargs=True,
        )
    run_pipeline(spec, example_image, pipe=pipe, record=False)
    boundary = spec.generation["boundary_ratio"] * pipe.scheduler.config.num_train_timesteps
    timesteps = [float(t) for t in pipe.scheduler.timesteps]
    high = sum(t >= boundary for t in timesteps)
    assert 0 < high < len(timesteps) == spec.steps
    expert = {True: "transformer", False: "transformer_2"}
    assert seen == [(expert[t >= boundary], t) for t in timesteps for _ in range(2)]


# Wan2.1: one transformer, CLIP image encoder


def test_tiny_wan21_is_the_wan21_architecture(specs):
    pipe = specs["tiny_wan21"].build()
    assert pipe.transformer_2 is None and pipe.config.boundary_ratio is None
    assert pipe.image_encoder is not None and pipe.image_processor is not None
    config = pipe.transformer.config
    assert config.image_dim == pipe.image_encoder.config.hidden_size
    assert config.added_kv_proj_dim == config.num_attention_heads * config.attention_head_dim
    assert sum(p.numel() for p in pipe.components["transformer"].parameters()) < 100_000


def test_wan21_image_tokens_reach_the_transformer(specs, example_image):
    """The CLIP features enter every step: the image encoder runs once, the transformer
    gets them (text padded to the 512 tokens Wan2.1's attention assumes) in both CFG passes."""
    spec = specs["tiny_wan21"]
    pipe = spec.build()
    seen = []
    pipe.image_encoder.register_forward_hook(lambda *_: seen.append("clip"))
    pipe.transformer.register_forward_pre_hook(
        lambda _, args, kwargs: seen.append(
            (kwargs["encoder_hidden_states"].shape[1], kwargs["encoder_hidden_states_image"].shape)
        ),
        with_kwargs=True,
    )
    run_pipeline(spec, example_image, pipe=pipe, record=False, num_inference_steps=2)
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
def test_settings_wan21_cannot_honour_are_rejected(specs, extra, message):
    spec = specs["tiny_wan21"]
    with pytest.raises(ValueError, match=message):
        spec.pipeline_family.build_tiny(spec.generation | extra)


def test_wan21_load_reads_a_saved_pipeline_in_mixed_precision(specs, example_image, tmp_path):
    """The real-weight loader on a saved tiny pipeline: transformer and text encoder in the
    entry's dtype, VAE and CLIP image encoder in float32, and it runs and decodes."""
    spec = specs["tiny_wan21"]
    spec.build().save_pretrained(tmp_path)
    pipe = spec.pipeline_family.load(str(tmp_path), spec.generation, torch.bfloat16)
    assert (pipe.transformer.dtype, pipe.text_encoder.dtype) == (torch.bfloat16, torch.bfloat16)
    assert (pipe.vae.dtype, pipe.image_encoder.dtype) == (torch.float32, torch.float32)
    assert pipe.transformer_2 is None and pipe.config.boundary_ratio is None
    _, _, out = run_pipeline(spec, example_image, pipe=pipe, record=False, num_inference_steps=2)
    frames = spec.pipeline_family.decode(pipe, spec.pipeline_family.final_latents(pipe, out))
    gen = spec.generation
    assert frames.shape == (gen["num_frames"], gen["height"], gen["width"], 3)
    assert frames.dtype == np.uint8


# HunyuanVideo-1.5: size and guidance set on the pipeline


@pytest.fixture(scope="module")
def hunyuan_run(specs, example_image):
    return run_pipeline(specs["tiny_hunyuan15"], example_image, record=False)


def test_hunyuan15_settings_reach_the_pipeline(specs, hunyuan_run):
    pipe, _, out = hunyuan_run
    gen = specs["tiny_hunyuan15"].generation
    assert pipe.scheduler.config.shift == gen["flow_shift"]
    assert pipe.guider.guidance_scale == gen["guidance_scale"]
    assert pipe.tokenizer_max_length == gen["max_sequence_length"]
    assert not pipe.vae.use_tiling  # a runtime setting, applied by runtime.place
    # 9 frames -> 3 latent frames (temporal x4); 64 x 112 px -> 4 x 7 latents (spatial x16)
    assert out.frames.shape == (1, 4, 3, 4, 7)


def test_hunyuan15_size_without_a_bucket_is_refused(specs):
    spec = specs["tiny_hunyuan15"]
    with pytest.raises(ValueError, match=r"makes 96x64 \(not 112x60\)"):
        spec.pipeline_family.build_tiny(spec.generation | {"height": 60})


def test_hunyuan15_load_applies_the_settings_to_saved_weights(registry, hunyuan_run, tmp_path):
    hunyuan_run[0].save_pretrained(tmp_path)
    entry = registry["tiny_hunyuan15"]
    gen = entry["generation"] | {"flow_shift": 5.0, "guidance_scale": 3.0}
    entry = entry | {"source": str(tmp_path), "generation": gen}
    pipe = load_registry({"saved": entry})["saved"].build()
    assert (pipe.scheduler.config.shift, pipe.guider.guidance_scale) == (5.0, 3.0)
    assert pipe.transformer.dtype == torch.float32
    assert pipe.video_processor.calculate_default_height_width(360, 640, pipe.target_size) == (
        gen["height"],
        gen["width"],
    )


@pytest.fixture(scope="module")
def hunyuan_transformer_calls(specs, example_image):
    """The tiny transformer and its two calls of the first step (prompt, empty negative prompt)."""
    spec = specs["tiny_hunyuan15"]
    pipe = spec.build()
    calls = []
    pipe.transformer.register_forward_pre_hook(
        lambda _, args, kwargs: calls.append(kwargs), with_kwargs=True
    )
    run_pipeline(spec, example_image, pipe=pipe, record=False, num_inference_steps=1)
    return pipe.transformer, calls


def _with_processor(transformer, processor_class, **inputs) -> torch.Tensor:
    for block in transformer.transformer_blocks:
        block.attn.set_processor(processor_class())
    try:
        with torch.no_grad():
            return transformer(**inputs, return_dict=False)[0]
    finally:
        use_prefix_attention(transformer)


def test_hunyuan15_prefix_attention_equals_diffusers_processor(hunyuan_transformer_calls):
    """Batch 2 with different text padding per sample (prompt and empty negative prompt):
    the mask-free processor gives diffusers' output within 1e-5 (float32)."""
    transformer, calls = hunyuan_transformer_calls
    cond, uncond = calls
    valid = [
        int(c["encoder_attention_mask"].sum() + c["encoder_attention_mask_2"].sum())
        for c in (cond, uncond)
    ]
    assert valid[0] > valid[1] > 0  # both padded (32 + 8 text tokens), by different amounts
    assert valid[0] < 40
    batch = {
        k: torch.cat([v, uncond[k]]) if isinstance(v, torch.Tensor) else v for k, v in cond.items()
    }
    batch.pop("return_dict", None)
    ours = _with_processor(transformer, PrefixAttnProcessor, **batch)
    theirs = _with_processor(transformer, HunyuanVideo15AttnProcessor2_0, **batch)
    assert theirs.abs().max() > 0.1
    torch.testing.assert_close(ours, theirs, atol=1e-5, rtol=1e-5)


def test_hunyuan15_attention_never_builds_a_sequence_squared_tensor(hunyuan_transformer_calls):
    """No op output of a transformer call has two axes as long as the joint sequence S (the
    dense mask of diffusers' processor, [1, 1, S, S], does)."""
    transformer, calls = hunyuan_transformer_calls
    inputs = {k: v for k, v in calls[0].items() if k != "return_dict"}
    text = (inputs[k].shape[1] for k in ("encoder_attention_mask", "encoder_attention_mask_2"))
    seq = inputs["hidden_states"][0, 0].numel() + sum(text) + inputs["image_embeds"].shape[1]
    squares = {}
    for processor in (PrefixAttnProcessor, HunyuanVideo15AttnProcessor2_0):
        with _Shapes() as shapes:
            _with_processor(transformer, processor, **inputs)
        squares[processor] = [s for s in shapes.seen if sum(n == seq for n in s) >= 2]
    assert squares[HunyuanVideo15AttnProcessor2_0]  # the check sees diffusers' mask
    assert squares[PrefixAttnProcessor] == []


class _Shapes(TorchDispatchMode):
    """Records the shape of every tensor an aten op returns."""

    def __init__(self):
        super().__init__()
        self.seen = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for tensor in out if isinstance(out, (tuple, list)) else [out]:
            if isinstance(tensor, torch.Tensor):
                self.seen.append(tuple(tensor.shape))
        return out


# LTX-2.3: video and audio streams, spatio-temporal guidance


def test_ltx23_only_the_video_steps_are_recorded_and_audio_is_untouched(specs, example_image):
    spec = specs["tiny_ltx23"]
    pipe, rec, out = run_pipeline(spec, example_image, STEPS)
    assert rec.calls == spec.steps  # the audio stream's scheduler copy steps unrecorded
    # the scheduler steps frames 1..N only; frame 0 (the image latent) comes from the final latent
    final = spec.pipeline_family.final_latents(pipe, out)
    assert rec.checkpoints[40].x0.shape[2] == final.shape[2] - 1
    _, _, plain = run_pipeline(spec, example_image, record=False)
    # same seed, no recorder: identical video and audio, so no audio step was misrouted
    assert torch.equal(plain.frames, out.frames)
    assert torch.equal(plain.audio, out.audio)


def test_ltx23_stg_blocks_must_exist_in_the_transformer(specs):
    spec = specs["tiny_ltx23"]
    with pytest.raises(ValueError, match="stg_blocks"):
        spec.pipeline_family.build_tiny(spec.generation | {"stg_blocks": [28]})


def test_ltx23_keeps_its_audio_only_when_asked(specs, registry, example_image, tmp_path):
    entry = registry["tiny_ltx23"]
    keep = {"keep": entry | {"generation": entry["generation"] | {"keep_audio": True}}}
    for spec, out in (
        (specs["tiny_ltx23"], tmp_path / "dropped"),
        (load_registry(keep)["keep"], tmp_path / "kept"),
    ):
        generate(spec, str(example_image), "a bell rings", [1, 40], "x0", out)
    streams = {}
    for name in ("dropped", "kept"):
        with av.open(str(tmp_path / name / "video.mp4")) as container:
            streams[name] = sorted(s.type for s in container.streams)
        assert len(decord.VideoReader(str(tmp_path / name / "video.mp4"))) == 9
    assert streams == {"dropped": ["video"], "kept": ["audio", "video"]}
