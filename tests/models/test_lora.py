"""VBVR LoRAs in both published formats, on tiny Wan pipelines, from files the tests write.

DiffSynth-format files use DiffSynth-Studio's own key names exactly as its trainer saves them
(`blocks.{i}.self_attn.q.lora_A.default.weight`, ...; see vgi_models/lora.py); diffusers-format
files use `transformer.blocks.{i}.attn1.to_q.lora_A.weight`, .... Published ranks are 32; the
tests use rank 4.
"""

from __future__ import annotations

import pytest
import torch
from safetensors.torch import save_file

from tests.support.pipelines import run_pipeline
from vgi_models.lora import LoraError, apply_lora, diffsynth_to_original

RANK = 4
STEPS = 4
ATTENTION = {"q": "to_q", "k": "to_k", "v": "to_v", "o": "to_out.0"}


@pytest.fixture(scope="module")
def spec(specs):
    return specs["tiny_wan22"]


@pytest.fixture(scope="module")
def spec21(specs):
    return specs["tiny_wan21"]


def run(spec, pipe, image) -> torch.Tensor:
    """The latent video of `pipe` in STEPS denoising steps."""
    return run_pipeline(spec, image, pipe=pipe, record=False, num_inference_steps=STEPS)[2].frames


@pytest.fixture(scope="module")
def base(spec, example_image):
    return run(spec, spec.build(), example_image)


def wan_modules(transformer):
    """(DiffSynth name, diffusers name, in, out) of every module VBVR trains on Wan."""
    config = transformer.config
    dim = config.num_attention_heads * config.attention_head_dim
    for i in range(config.num_layers):
        for ours, theirs in (("self_attn", "attn1"), ("cross_attn", "attn2")):
            for o, c in ATTENTION.items():
                yield f"blocks.{i}.{ours}.{o}", f"blocks.{i}.{theirs}.{c}", dim, dim
        yield f"blocks.{i}.ffn.0", f"blocks.{i}.ffn.net.0.proj", dim, config.ffn_dim
        yield f"blocks.{i}.ffn.2", f"blocks.{i}.ffn.net.2", config.ffn_dim, dim


def lora_key(fmt, ours, theirs, ab):
    """DiffSynth: its own module name + peft's `.default`; diffusers: `transformer.` + its name."""
    if fmt == "diffsynth":
        return f"{ours}.lora_{ab}.default.weight"
    return f"transformer.{theirs}.lora_{ab}.weight"


def lora_weights(transformer, fmt, seed, zero_b=False):
    """A rank-4 LoRA for a tiny Wan transformer, keyed as the published files of `fmt` are."""
    generator = torch.Generator().manual_seed(seed)
    state = {}
    for ours, theirs, n_in, n_out in wan_modules(transformer):
        a = torch.randn(RANK, n_in, generator=generator) / n_in**0.5
        b = torch.zeros(n_out, RANK) if zero_b else torch.randn(n_out, RANK, generator=generator)
        state[lora_key(fmt, ours, theirs, "A")] = a
        state[lora_key(fmt, ours, theirs, "B")] = b * 0.1
    return state


def write_wan22(directory, pipe, fmt, high=True, low=True):
    """high_noise_lora.safetensors / low_noise_lora.safetensors; `False` writes zero B."""
    directory.mkdir(parents=True, exist_ok=True)
    for name, model, seed, on in (
        ("high_noise_lora", pipe.transformer, 1, high),
        ("low_noise_lora", pipe.transformer_2, 2, low),
    ):
        save_file(lora_weights(model, fmt, seed, zero_b=not on), directory / f"{name}.safetensors")
    return str(directory)


def expert_outputs(pipe) -> dict[str, torch.Tensor]:
    """Each expert's prediction on one fixed random input."""
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(1, 36, 2, 4, 4, generator=generator)
    text = torch.randn(1, 8, pipe.transformer.config.text_dim, generator=generator)
    with torch.inference_mode():
        return {
            name: getattr(pipe, name)(x, torch.tensor([500]), text, return_dict=False)[0]
            for name in ("transformer", "transformer_2")
        }


def test_zero_b_lora_leaves_outputs_identical(spec, base, example_image, tmp_path):
    pipe = spec.build()
    path = write_wan22(tmp_path, pipe, "diffsynth", high=False, low=False)
    summary = apply_lora(pipe, "wan22", {"format": "diffsynth", "path": path})
    layers = {c: s["layers"] for c, s in summary["components"].items()}
    assert layers == {"transformer": 20, "transformer_2": 20}  # 2 blocks x q,k,v,o x2, ffn.0/2
    assert torch.equal(run(spec, pipe, example_image), base)


@pytest.mark.parametrize("fmt", ["diffusers", "diffsynth"])
def test_nonzero_lora_changes_outputs(spec, base, example_image, tmp_path, fmt):
    pipe = spec.build()
    summary = apply_lora(pipe, "wan22", {"format": fmt, "path": write_wan22(tmp_path, pipe, fmt)})
    assert summary["components"]["transformer_2"] == {
        "file": str(tmp_path / "low_noise_lora.safetensors"),
        "layers": 20,
    }
    assert (run(spec, pipe, example_image) - base).abs().max() > 1e-3


def test_fused_agrees_with_unfused(spec, example_image, tmp_path):
    scale = 0.7
    original = spec.build()
    path = write_wan22(tmp_path, original, "diffsynth")
    results = {}
    for fuse in (False, True):
        pipe = spec.build()
        apply_lora(
            pipe, "wan22", {"format": "diffsynth", "path": path, "scale": scale, "fuse": fuse}
        )
        results[fuse] = run(spec, pipe, example_image)
    assert (results[True] - results[False]).abs().max() < 1e-4
    # the fused weight is W + scale * B @ A: DiffSynth's alpha = rank means a LoRA scale of 1
    state = lora_weights(original.transformer, "diffsynth", seed=1)
    a = state["blocks.1.cross_attn.v.lora_A.default.weight"]
    b = state["blocks.1.cross_attn.v.lora_B.default.weight"]
    expected = original.transformer.blocks[1].attn2.to_v.weight + scale * b @ a
    fused = pipe.transformer.blocks[1].attn2.to_v
    assert isinstance(fused, torch.nn.Linear)  # LoRA layers unloaded after fusing
    torch.testing.assert_close(fused.weight, expected, rtol=0, atol=1e-6)


@pytest.mark.parametrize("expert", ["transformer", "transformer_2"])
def test_diffsynth_wan22_files_land_in_their_expert(spec, tmp_path, expert):
    """high_noise_lora changes `transformer` only, low_noise_lora `transformer_2` only."""
    before = expert_outputs(spec.build())
    pipe = spec.build()
    high, low = expert == "transformer", expert == "transformer_2"
    apply_lora(
        pipe,
        "wan22",
        {"format": "diffsynth", "path": write_wan22(tmp_path, pipe, "diffsynth", high, low)},
    )
    after = expert_outputs(pipe)
    for name in after:
        assert torch.equal(after[name], before[name]) == (name != expert), name


def test_wan21_takes_one_lora_file(spec21, tmp_path):
    pipe = spec21.build()
    file = tmp_path / "lora.safetensors"
    save_file(lora_weights(pipe.transformer, "diffsynth", seed=3), file)
    before = pipe.transformer.blocks[0].attn2.to_k.weight.clone()
    for path in (tmp_path, file):  # the release directory, or the file itself
        pipe = spec21.build()
        summary = apply_lora(
            pipe, "wan21", {"format": "diffsynth", "path": str(path), "fuse": True}
        )
        assert summary["components"] == {"transformer": {"file": str(file), "layers": 20}}
        assert not torch.equal(pipe.transformer.blocks[0].attn2.to_k.weight, before)
        # the image keys (k_img, v_img) are not VBVR targets and stay untouched
        assert isinstance(pipe.transformer.blocks[0].attn2.add_k_proj, torch.nn.Linear)


@pytest.mark.parametrize(
    "fmt, keys",
    [
        # a Flux-style DiffSynth file: no Wan module at all
        ("diffsynth", ["single_blocks.0.linear1.lora_A.default.weight"]),
        # diffusers module names without the `transformer.` prefix: diffusers only warns
        ("diffusers", ["blocks.0.attn1.to_q.lora_A.weight", "blocks.0.attn1.to_q.lora_B.weight"]),
        # a diffusers-format file for another transformer (LTX-2 module names)
        ("diffusers", ["transformer.transformer_blocks.0.attn1.to_q.lora_A.weight"]),
    ],
)
def test_file_without_matching_keys_is_an_error(spec21, tmp_path, fmt, keys):
    file = tmp_path / "lora.safetensors"
    save_file(
        {k: torch.zeros(24, RANK) if "lora_B" in k else torch.zeros(RANK, 24) for k in keys}, file
    )
    with pytest.raises(LoraError, match=str(file)):
        apply_lora(spec21.build(), "wan21", {"format": fmt, "path": str(file)})


def test_missing_expert_file_is_named(spec, tmp_path):
    (tmp_path / "high_noise_lora.safetensors").write_bytes(b"")
    with pytest.raises(FileNotFoundError, match="low_noise_lora.safetensors"):
        apply_lora(spec.build(), "wan22", {"format": "diffsynth", "path": str(tmp_path)})


def test_tiny_lora_setting_loads_without_files(spec, base, example_image):
    """`path: tiny` (the tiny_vbvr_* registry entries): a seeded random LoRA in the format's
    published key names, loaded through the same path as a file."""
    pipe = spec.build()
    summary = apply_lora(pipe, "wan22", {"format": "diffsynth", "path": "tiny"})
    assert {c: s["layers"] for c, s in summary["components"].items()} == {
        "transformer": 20,
        "transformer_2": 20,
    }
    assert not torch.equal(run(spec, pipe, example_image), base)


@pytest.mark.parametrize("prefix", ["", "pipe.dit.", "diffusion_model."])
@pytest.mark.parametrize("infix", [".default", ""])
def test_diffsynth_key_forms(prefix, infix):
    key = f"{prefix}blocks.7.cross_attn.o.lora_B{infix}.weight"
    assert list(diffsynth_to_original({key: 0}, "wan22", "f")) == [
        "diffusion_model.blocks.7.cross_attn.o.lora_B.weight"
    ]


LTX_TARGETS = (".to_q", ".to_k", ".to_v", ".to_out.0")


def ltx_lora(transformer, fmt, seed=5):
    """Every to_q, to_k, to_v, to_out.0 of the LTX-2 blocks (video, audio and both cross-modal
    attentions). DiffSynth's LTX-2 DiT keeps the original LTX-2 names, which diffusers shares
    for these modules: `transformer_blocks.{i}.audio_to_video_attn.to_v`."""
    generator = torch.Generator().manual_seed(seed)
    state = {}
    for name, module in transformer.named_modules():
        if name.startswith("transformer_blocks.") and name.endswith(LTX_TARGETS):
            state[lora_key(fmt, name, name, "A")] = torch.randn(
                RANK, module.in_features, generator=generator
            )
            state[lora_key(fmt, name, name, "B")] = 0.1 * torch.randn(
                module.out_features, RANK, generator=generator
            )
    return state


@pytest.mark.parametrize("fmt", ["diffsynth", "diffusers"])
def test_ltx23_lora_loads_into_the_transformer(specs, tmp_path, fmt):
    pipe = specs["tiny_ltx23"].build()
    state = ltx_lora(pipe.transformer, fmt)
    name = "lora.safetensors" if fmt == "diffsynth" else "pytorch_lora_weights.safetensors"
    save_file(state, tmp_path / name)
    attention = pipe.transformer.transformer_blocks[1].audio_to_video_attn
    before = attention.to_v.weight.clone()
    summary = apply_lora(pipe, "ltx23", {"format": fmt, "path": str(tmp_path), "fuse": True})
    # 2 blocks x (attn1, attn2, audio_attn1, audio_attn2, audio_to_video, video_to_audio) x 4
    assert summary["components"] == {"transformer": {"file": str(tmp_path / name), "layers": 48}}
    module = "transformer_blocks.1.audio_to_video_attn.to_v"
    delta = state[lora_key(fmt, module, module, "B")] @ state[lora_key(fmt, module, module, "A")]
    fused = pipe.transformer.transformer_blocks[1].audio_to_video_attn.to_v.weight
    torch.testing.assert_close(fused, before + delta, rtol=0, atol=1e-6)
