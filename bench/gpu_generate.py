"""Seconds per video, memory, MFU and exactness of each runtime option, per model, at full size.

Wan2.2-I2V-A14B (one expert), HunyuanVideo-1.5 I2V 720p and LTX-2.3 are built from their released
configs with random weights (meta device, then allocated on the GPU in bf16) and their
transformer's `forward` is timed on inputs shaped as the diffusers pipeline passes them at the
study's settings (config/models.yaml). A step is what the pipeline runs per denoising step: Wan
and HunyuanVideo-1.5 CFG = 2 batch-1 calls; LTX-2.3 = cond+uncond batched, an STG call and a
modality-isolation call. FLOPs per call of batch b, with d = heads * head_dim:

    b * (sum over block Linears of 2 * |W| * tokens of its stream
         + sum over attentions of 4 * n_query * n_key * d)

(embedders, norms, RoPE and the output projection, about 1%, left out). Forward hooks count the
block Linears' FLOPs in the reference's first call: `linear_check` (counted / formula) must be 1.

Each runtime option (`OPTIONS`: an attention backend, regional compilation, sequential offload,
VAE tiling) is run alone against the reference (native attention, eager, on the GPU, untiled):
- seconds per video = the denoisers' load (their weights copied from host memory: disk reads
  and the text encoder come on top) + the warm-up (compilation) + `num_inference_steps` steps
  + DECODES VAE decodes (LTX-2.3: its first stage);
- peak GPU memory, MFU (FLOP rate / the GPU's datasheet dense bf16 peak);
- `call_rel`: the relative RMS difference of one call's output from the reference's on the
  same inputs (VAE tiling: of the decoded video); bf16 rounds at 2^-8 = 0.0039.
An option whose kernel is not installed reports `unavailable`. On an H100 the published figure
for Wan2.2-I2V-A14B at 720p (1055.9 s, 59.7 GB: Wan-Video/Wan2.2's table) is printed beside
ours.

    timeout 570 python bench/gpu_generate.py --models wan22_i2v_a14b --steps 1 \
        --json-out "$OUT/gpu_generate.json"

(a Wan2.2 step at 720p is about 13 PFLOP, some 30 s on an H100, and at `--steps 1` each option
makes four calls, two steps' worth: one model per command of 10 minutes; `--options` narrows).

`--scale tiny` runs the same code on the CPU with the project's tiny builds, and adds each
option's measured check (`vgi_models.exactness`): the tiny pipeline's trajectory (final latents,
x0 checkpoints, video) under the option against the reference's, over `--probe-steps` steps:
docs/models.md's table of runtime options comes from `--scale tiny --options native
_native_math compile vae_tiling`. `--smoke` is `--scale tiny --steps 1 --probe-steps 2` without
compilation, CI's run: no figure of the real models. The last output line is the JSON summary;
`--json-out` rewrites it after each model and at the end.
"""

from __future__ import annotations

import argparse
import functools
import gc
import json
import math
import sys
import time
import traceback
from dataclasses import dataclass
from pathlib import Path

import diffusers
import pandas as pd
import torch
import yaml
from accelerate import init_empty_weights

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from vgi_models import exactness  # noqa: E402
from vgi_models.exactness import probe_tiles, rms  # noqa: E402
from vgi_models.families.hunyuan15_attention import use_prefix_attention  # noqa: E402
from vgi_models.registry import load_registry  # noqa: E402
from vgi_models.runtime import APPROXIMATE, EXACT, trajectory_runtime  # noqa: E402

# dense bf16 peak TFLOPS by the GPU's name (NVIDIA datasheets; H100, H200: SXM)
DATASHEET_TFLOPS = {"H100": 989.0, "H200": 989.0, "H20": 148.0, "A100": 312.0}
TIMESTEP = 500.0  # mid-trajectory; the value does not change the work
GIB = 2**30
MODELS = ("ltx23_i2v", "wan22_i2v_a14b", "hunyuan15_i2v")  # registry keys, quickest first
OPTIONS = {  # name -> the runtime settings it sets (vgi_models.runtime)
    "native": {},  # the reference
    "_native_math": {"attention_backend": "_native_math"},  # PyTorch's unfused SDPA: the CPU's
    "xformers": {"attention_backend": "xformers"},
    "flash": {"attention_backend": "flash"},
    "_flash_3": {"attention_backend": "_flash_3"},
    "sage": {"attention_backend": "sage"},
    "compile": {"compile": True},
    "offload": {"offload": "sequential"},
    "vae_tiling": {"vae_tiling": True},
}
# _native_math at full size would hold every S x S attention matrix: the tiny scale's alone
DEFAULT_OPTIONS = {
    "full": [o for o in OPTIONS if o != "_native_math"],
    "tiny": ["native", "_native_math", "compile", "vae_tiling"],
}
SMOKE_OPTIONS = ["native", "_native_math", "vae_tiling"]
CPU_BACKENDS = ("native", "_native_math")
# decodes per video: the video and config/config.yaml's seven checkpoints (at most)
DECODES = 1 + len(yaml.safe_load((REPO / "config/config.yaml").read_text())["denoise"]["steps"])
PROBE_IMAGE = REPO / "tasks/examples/maze_square/input_image/lv1/maze_square_lv1_001.png"
OFFICIAL_H100_S, OFFICIAL_H100_GB = 1055.9, 59.7  # Wan-Video/Wan2.2: I2V-A14B, 720p, one H100


@dataclass(frozen=True)
class Call:
    """One kind of transformer call in a denoising step."""

    name: str
    batch: int
    per_step: int
    stg_blocks: tuple[int, ...] = ()  # LTX: self-attention skipped (STG)
    isolate: bool = False  # LTX: audio<->video attention off (modality guidance)


def build_empty(cls, config):
    """The module tree on the meta device; buffers (RoPE tables) are computed for real."""
    with init_empty_weights(include_buffers=False):
        return cls.from_config(config).eval()


class Model:
    """One model at one scale: configs, shapes and FLOPs (derived before allocating), inputs.

    A family defines `count_tokens()`, `stream(linear, block, call)` (the tokens a block's Linear
    runs on; None: not run in `call`), `attention_flops(call)` and `inputs(call, new)`.
    """

    vae_fp32 = False

    def __init__(self, spec, scale: str):
        if scale == "tiny":  # the configs of the project's tiny build
            pipe = spec.build()
            self.transformer, self.vae = dict(pipe.transformer.config), dict(pipe.vae.config)
        self.tiny, self.gen = scale == "tiny", spec.generation
        self.denoisers = len(spec.pipeline_family.denoisers)
        meta = build_empty(self.transformer_cls, self.transformer)
        self.c = meta.config
        channels, t_ratio, s_ratio = self.geometry(build_empty(self.vae_cls, self.vae))
        frames, height, width = (self.gen[k] for k in ("num_frames", "height", "width"))
        self.latent = (channels, (frames - 1) // t_ratio + 1, height // s_ratio, width // s_ratio)
        self.tokens = self.count_tokens()
        self.calls = self.make_calls()
        self.params = sum(p.numel() for p in meta.parameters())
        self.flops = {
            c.name: {"linear": self.linear_flops(meta, c), "attention": self.attention_flops(c)}
            for c in self.calls
        }

    def blocks(self, model):
        return model.transformer_blocks

    def prepare(self, model):
        """The denoiser as the family module runs it (attention processors)."""
        return model

    def geometry(self, vae) -> tuple[int, int, int]:
        """Latent channels, temporal and spatial compression."""
        c = vae.config
        return c.latent_channels, vae.temporal_compression_ratio, vae.spatial_compression_ratio

    def video_tokens(self) -> int:
        _, f, h, w = self.latent
        return f // self.c.patch_size_t * (h // self.c.patch_size) * (w // self.c.patch_size)

    def width(self, prefix: str = "") -> int:
        """Attention width d = heads * head_dim (LTX's audio stream: prefix "audio_")."""
        return self.c[f"{prefix}num_attention_heads"] * self.c[f"{prefix}attention_head_dim"]

    def make_calls(self) -> list[Call]:
        return [Call("cond+uncond", batch=1, per_step=2 if self.gen["guidance_scale"] > 1 else 1)]

    def linear_flops(self, model, call: Call) -> int:
        """The formula's Linear term: 2 * |W| * tokens of the Linear's stream, over the blocks."""
        return call.batch * sum(
            2 * m.weight.numel() * self.tokens[stream]
            for i, block in enumerate(self.blocks(model))
            for name, m in block.named_modules()
            if isinstance(m, torch.nn.Linear) and (stream := self.stream(name, i, call))
        )

    def step_tflop(self) -> float:
        return sum(c.per_step * sum(self.flops[c.name].values()) for c in self.calls) / 1e12

    def summary(self) -> dict:
        calls = {
            c.name: {"batch": c.batch, "per_step": c.per_step}
            | {k: v / 1e12 for k, v in self.flops[c.name].items()}  # TFLOP
            for c in self.calls
        }
        return {
            "params_b": round(self.params / 1e9, 3),
            "video": [self.gen["num_frames"], self.gen["height"], self.gen["width"]],
            "latent": list(self.latent),
            "tokens": self.tokens,
            "calls": calls,
            "tflop_per_step": self.step_tflop(),
        }


class Wan(Model):
    transformer_cls, vae_cls = diffusers.WanTransformer3DModel, diffusers.AutoencoderKLWan
    transformer = {"in_channels": 36}  # Wan2.2-I2V-A14B-Diffusers: class defaults, 16+16+4 in
    vae = {}  # the class defaults are the Wan2.1 VAE that A14B ships
    vae_fp32 = True  # as vgi_models.families.wan loads it

    def blocks(self, model):
        return model.blocks

    def geometry(self, vae):
        c = vae.config
        return c.z_dim, c.scale_factor_temporal, c.scale_factor_spatial

    def count_tokens(self):
        _, f, h, w = self.latent
        pt, ph, pw = self.c.patch_size
        # the pipeline pads the prompt to max_sequence_length (default 512)
        text = self.gen.get("max_sequence_length", 512)
        return {"video": f // pt * (h // ph) * (w // pw), "text": text}

    def stream(self, linear, block, call):
        return "text" if linear in ("attn2.to_k", "attn2.to_v") else "video"

    def attention_flops(self, call):
        n, t = self.tokens["video"], self.tokens["text"]
        return call.batch * self.c.num_layers * 4 * (n * n + n * t) * self.width()

    def inputs(self, call, new):
        b, c = call.batch, self.c
        return dict(
            hidden_states=torch.randn(b, c.in_channels, *self.latent[1:], **new),
            timestep=torch.full((b,), TIMESTEP, device=new["device"]),
            encoder_hidden_states=torch.randn(b, self.tokens["text"], c.text_dim, **new),
        )


class Hunyuan15(Model):
    transformer_cls = diffusers.HunyuanVideo15Transformer3DModel
    vae_cls = diffusers.AutoencoderKLHunyuanVideo15
    transformer = {"target_size": 960}  # convert_hunyuan_video1_5_to_diffusers.py, 720p_i2v
    vae = {}  # the class defaults: 32 channels, 16x spatial, 4x temporal
    GLYPH, IMAGE = 256, 729  # ByT5 prompt padded to 256 tokens; 729 SigLIP image tokens
    TEXT_LINEARS = ("attn.add_", "attn.to_add_out", "ff_context.")  # on the text tokens

    def prepare(self, model):
        use_prefix_attention(model)  # as vgi_models.families.hunyuan15 does: no S x S mask
        return model

    def count_tokens(self):
        qwen = self.gen.get("max_sequence_length", 1000)  # the pipeline pads Qwen to 1000
        text = qwen + self.GLYPH + self.IMAGE
        return {"video": self.video_tokens(), "qwen": qwen, "text": text, "temb": 1}

    def stream(self, linear, block, call):
        if linear in ("norm1.linear", "norm1_context.linear"):  # AdaLN: timestep embedding
            return "temb"
        return "text" if linear.startswith(self.TEXT_LINEARS) else "video"

    def attention_flops(self, call):
        n = self.tokens["video"] + self.tokens["text"]
        return call.batch * self.c.num_layers * 4 * n * n * self.width()

    def inputs(self, call, new):
        b, c, qwen = call.batch, self.c, self.tokens["qwen"]

        def mask(n):  # a quarter of the tokens valid
            return (torch.arange(n, device=new["device"]) < n // 4).to(new["dtype"]).expand(b, n)

        return dict(
            hidden_states=torch.randn(b, c.in_channels, *self.latent[1:], **new),
            timestep=torch.full((b,), TIMESTEP, **new),
            encoder_hidden_states=torch.randn(b, qwen, c.text_embed_dim, **new),
            encoder_attention_mask=mask(qwen),
            encoder_hidden_states_2=torch.randn(b, self.GLYPH, c.text_embed_2_dim, **new),
            encoder_attention_mask_2=mask(self.GLYPH),
            image_embeds=torch.randn(b, self.IMAGE, c.image_embed_dim, **new),
        )


class LTX23(Model):
    transformer_cls = diffusers.LTX2VideoTransformer3DModel
    vae_cls = diffusers.AutoencoderKLLTX2Video
    # convert_ltx2_to_diffusers.py, version 2.3: the class defaults plus these.
    transformer = dict(
        gated_attn=True,
        cross_attn_mod=True,
        audio_gated_attn=True,
        audio_cross_attn_mod=True,
        rope_type="split",
        use_prompt_embeddings=False,
        perturbed_attn=True,
    )
    # The same script's 2.3 video VAE (the class defaults are LTX-2.0's), 32x / 8x.
    vae = dict(
        block_out_channels=(256, 512, 1024, 1024),
        decoder_block_out_channels=(256, 512, 512, 1024),
        layers_per_block=(4, 6, 4, 2, 2),
        decoder_layers_per_block=(4, 6, 4, 2, 2),
        decoder_spatio_temporal_scaling=(True,) * 4,
        decoder_inject_noise=(False,) * 5,
        upsample_type=("spatiotemporal", "spatiotemporal", "temporal", "spatial"),
        upsample_residual=(False,) * 4,
        upsample_factor=(2, 2, 1, 2),
        decoder_causal=False,
        decoder_spatial_padding_mode="zeros",
        spatial_compression_ratio=32,
        temporal_compression_ratio=8,
    )
    # attention module -> (query stream, key/value stream)
    ATTENTION = {
        "attn1": ("video", "video"),
        "attn2": ("video", "text"),
        "audio_attn1": ("audio", "audio"),
        "audio_attn2": ("audio", "text"),
        "audio_to_video_attn": ("video", "audio"),
        "video_to_audio_attn": ("audio", "video"),
    }

    def make_calls(self):
        # The audio guidance defaults (CFG 7, STG 1, modality 3) turn on all three calls.
        return [
            Call("cond+uncond", batch=2, per_step=1),
            Call("stg", batch=1, per_step=1, stg_blocks=tuple(self.gen["stg_blocks"])),
            Call("isolation", batch=1, per_step=1, isolate=True),
        ]

    def count_tokens(self):
        c = self.c
        audio_per_s = c.audio_sampling_rate / c.audio_hop_length / c.audio_scale_factor
        return {
            "video": self.video_tokens(),
            "audio": round(self.gen["num_frames"] / self.gen["fps"] * audio_per_s),
            "text": self.gen.get("max_sequence_length", 1024),  # the text connectors' output
        }

    def stream(self, linear, block, call):
        module, _, leaf = linear.partition(".")
        if module not in self.ATTENTION:
            return {"ff": "video", "audio_ff": "audio"}[module]
        isolated = call.isolate and module in ("audio_to_video_attn", "video_to_audio_attn")
        stg = block in call.stg_blocks and module in ("attn1", "audio_attn1")
        if isolated or (stg and leaf in ("to_q", "to_k")):  # not run in this call
            return None
        query, key = self.ATTENTION[module]
        return key if leaf in ("to_k", "to_v") else query

    def attention_flops(self, call):
        dv, da = self.width(), self.width("audio_")
        nv, na, t = self.tokens["video"], self.tokens["audio"], self.tokens["text"]
        cross = 4 * (nv * t * dv + na * t * da) + (0 if call.isolate else 8 * nv * na * da)
        self_attn = 4 * (nv * nv * dv + na * na * da)
        layers = self.c.num_layers
        return call.batch * (layers * (cross + self_attn) - len(call.stg_blocks) * self_attn)

    def inputs(self, call, new):
        b, c, (_, f, h, w) = call.batch, self.c, self.latent
        nv, na, t = self.tokens["video"], self.tokens["audio"], self.tokens["text"]
        timestep = torch.full((b,), TIMESTEP, device=new["device"])
        video_timestep = timestep[:, None].repeat(1, nv)
        video_timestep[:, : h * w] = 0  # frame 0 is the clean image latent
        text_mask = torch.ones(b, t, device=new["device"], dtype=torch.int64)
        return dict(
            hidden_states=torch.randn(b, nv, c.in_channels, **new),
            audio_hidden_states=torch.randn(b, na, c.audio_in_channels, **new),
            encoder_hidden_states=torch.randn(b, t, c.cross_attention_dim, **new),
            audio_encoder_hidden_states=torch.randn(b, t, c.audio_cross_attention_dim, **new),
            timestep=video_timestep,
            audio_timestep=timestep,
            sigma=timestep,
            encoder_attention_mask=text_mask,
            audio_encoder_attention_mask=text_mask,
            num_frames=f,
            height=h,
            width=w,
            fps=float(self.gen["fps"]),
            audio_num_frames=na,
            isolate_modalities=call.isolate,
            spatio_temporal_guidance_blocks=list(call.stg_blocks) or None,
            use_cross_timestep=True,  # LTX-2.3 (the pipeline default)
        )


FAMILIES = {"wan22": Wan, "hunyuan15": Hunyuan15, "ltx23": LTX23}


@functools.cache
def registry() -> dict:
    return load_registry(yaml.safe_load((REPO / "config/models.yaml").read_text()))


@functools.cache
def plan(key: str, scale: str) -> Model:
    """Registry entry `key` (at tiny scale: its family's `tiny_*` entry), nothing allocated yet."""
    family = registry()[key].family
    return FAMILIES[family](registry()[f"tiny_{family}" if scale == "tiny" else key], scale)


def describe(key: str, scale: str) -> dict:
    return plan(key, scale).summary()


@torch.no_grad()
def materialize(model, device: str, dtype: torch.dtype):
    """Every parameter allocated on `device`, std 1/sqrt(fan_in) (1-D: 0.02), in the dtype
    `from_pretrained` gives it (fp32 inside `_keep_in_fp32_modules`)."""
    keep = set(model._keep_in_fp32_modules or [])
    generator = torch.Generator(device).manual_seed(0)
    for module_name, module in model.named_modules():
        for name, p in list(module._parameters.items()):
            if p is None:
                continue
            fp32 = keep & set(f"{module_name}.{name}".split("."))
            data = torch.empty(p.shape, device=device, dtype=torch.float32 if fp32 else dtype)
            data.normal_(0.0, p[0].numel() ** -0.5 if p.ndim >= 2 else 0.02, generator=generator)
            module._parameters[name] = torch.nn.Parameter(data, requires_grad=False)
    return model.to(device)


class MiniMaxH3(Model):
    """FLOPs only (not in MODELS: its modular pipeline is not measured here). One packed
    sequence (text, keyframe, audio and video rows) through every block, one pass a step
    (guidance-distilled)."""

    transformer_cls = diffusers.MiniMaxH3Transformer3DModel
    vae_cls = diffusers.AutoencoderKLMiniMaxH3
    transformer = {}  # the class defaults are the released checkpoint's (33.1 B parameters)
    vae = {}  # likewise: 16x spatial; 17 n + 5 frames -> 5 n + 2 latent frames
    TEXT = 512  # prompt and the keyframe's vision block: an allowance

    def make_calls(self):
        return [Call("one pass", batch=1, per_step=1)]

    def count_tokens(self):
        frames, height, width = (self.gen[k] for k in ("num_frames", "height", "width"))
        _, ph, pw = self.c.patch_size
        per_frame = height // 16 // ph * (width // 16 // pw)
        video = ((frames - 5) // 17 * 5 + 2) * per_frame + per_frame  # + the keyframe's rows
        audio = 2 * round(frames / 24 * 40)  # stereo, 40 latents a second
        return {"all": video + audio + self.TEXT, "temb": 1}

    def stream(self, linear, block, call):
        return "temb" if linear == "adaln_proj.linear" else "all"

    def attention_flops(self, call):
        n = self.tokens["all"]
        return call.batch * self.c.num_layers * 4 * n * n * self.width()


def counted_linear_flops(model, blocks, inputs: dict) -> int:
    """Runs `model` once; 2 * rows * |W| summed over the Linear calls in `blocks` (hooks)."""
    total = 0

    def count(module, args, output):
        nonlocal total
        total += 2 * (args[0].numel() // module.in_features) * module.weight.numel()

    linears = [m for m in blocks.modules() if isinstance(m, torch.nn.Linear)]
    handles = [m.register_forward_hook(count) for m in linears]
    model(**inputs, return_dict=False)
    for handle in handles:
        handle.remove()
    return total


def sync(device: str, reset_peak: bool = False) -> None:
    if device == "cuda":
        torch.cuda.synchronize()
        if reset_peak:
            torch.cuda.reset_peak_memory_stats()


def peak_gib(device: str) -> float | None:
    return round(torch.cuda.max_memory_allocated() / GIB, 2) if device == "cuda" else None


def peak_tflops(device: str) -> float | None:
    """The device's dense bf16 peak (None: a CPU, or a GPU not in DATASHEET_TFLOPS)."""
    name = torch.cuda.get_device_name() if device == "cuda" else ""
    found = [tflops for gpu, tflops in DATASHEET_TFLOPS.items() if gpu in name.split()]
    return found[0] if found else None


def tensors(output) -> list[torch.Tensor]:
    """The tensors of a denoiser's output tuple (LTX-2.3: video and audio)."""
    return [t for t in output if isinstance(t, torch.Tensor)]


def relative(output: list[torch.Tensor], reference: list[torch.Tensor]) -> float:
    """The largest relative RMS difference of `output` from `reference`, tensor by tensor."""
    return max(
        rms(o.float() - r.float()) / rms(r.float()) for o, r in zip(output, reference, strict=True)
    )


class Unavailable(Exception):
    """An option this machine cannot run (no CUDA, a kernel not installed)."""


class Denoiser:
    """One model's denoiser, allocated once with its inputs, run under each runtime option.

    Options run in the order given, the reference (`native`) first: its outputs are what
    each other option's are compared with. `offload` leaves the weights in accelerate's hooks,
    so it runs last.
    """

    def __init__(self, m: Model, device: str, dtype: torch.dtype):
        self.m, self.device = m, device
        sync(device, reset_peak=True)
        empty = build_empty(m.transformer_cls, m.transformer)
        self.model = m.prepare(materialize(empty, device, dtype))
        self.inputs = {c.name: m.inputs(c, {"device": device, "dtype": dtype}) for c in m.calls}
        self.reference: dict | None = None

    def call(self, c: Call) -> list[torch.Tensor]:
        return tensors(self.model(**self.inputs[c.name], return_dict=False))

    def load(self) -> dict:
        """Seconds to copy the weights from host memory onto the device (once per denoiser)."""
        model = self.model.to("cpu")
        sync(self.device)
        start = time.perf_counter()
        model.to(self.device)
        sync(self.device)
        return {"load_s": time.perf_counter() - start, "denoisers": self.m.denoisers}

    def measure(self, option: str, steps: int) -> dict:
        runtime, model, m, device = OPTIONS[option], self.model, self.m, self.device
        blocks = [b for b in model.modules() if type(b).__name__ in model._repeated_blocks]
        if runtime.get("offload") and device == "cpu":
            raise Unavailable("on a CPU there is nothing to offload to")
        if option != "native" and self.reference is None:
            raise Unavailable("no reference: native did not run")
        try:
            model.set_attention_backend(runtime.get("attention_backend", "native"))
        except (ImportError, RuntimeError, ValueError) as err:
            raise Unavailable(str(err)) from None
        if runtime.get("compile"):
            model.compile_repeated_blocks()
        if runtime.get("offload"):
            from accelerate import cpu_offload

            cpu_offload(model.to("cpu"), execution_device=device)
        figures = {}
        try:
            with torch.inference_mode():
                if self.reference is None:  # the reference: FLOPs counted against the formula
                    figures["linear_check"] = {
                        c.name: counted_linear_flops(model, m.blocks(model), self.inputs[c.name])
                        / m.flops[c.name]["linear"]
                        for c in m.calls
                    }
                sync(device, reset_peak=True)
                first = []  # each kind of call once, twice: the first pays any warm-up
                for _ in range(2):
                    start = time.perf_counter()
                    outputs = {c.name: self.call(c) for c in m.calls}
                    sync(device)
                    first.append(time.perf_counter() - start)
                start = time.perf_counter()
                for _ in range(steps):
                    for c in m.calls:
                        for _ in range(c.per_step):
                            self.call(c)
                sync(device)
                s_step = (time.perf_counter() - start) / steps
        finally:
            model.set_attention_backend("native")
            for block in blocks:  # compiled: back to eager
                block._compiled_call_impl = None
        if self.reference is None:
            self.reference = outputs
        tflops, peak = m.step_tflop() / s_step, peak_tflops(device)
        return figures | {
            "s_per_step": s_step,
            "warmup_s": max(0.0, first[0] - first[1]),
            "tflops": tflops,
            "mfu_pct": None if peak is None else 100 * tflops / peak,
            "weights_gib": sum(x.numel() * x.element_size() for x in model.parameters()) / GIB,
            "peak_gib": peak_gib(device),
            "call_rel": max(relative(outputs[n], r) for n, r in self.reference.items()),
        }


def run_vae(m: Model, device: str, dtype: torch.dtype) -> dict:
    """One decode of the video's latent untiled (the reference) and tiled (`vae_tiling`: the
    VAE's default tiles, a tiny VAE's `probe_tiles`), and the difference of the two videos."""
    vae_dtype = torch.float32 if m.vae_fp32 else dtype
    vae = materialize(build_empty(m.vae_cls, m.vae), device, vae_dtype)
    latents = torch.randn((1, *m.latent), device=device, dtype=vae_dtype)
    found, videos = {}, {}
    with torch.inference_mode():
        vae.decode(latents[:, :, :2, :8, :8], return_dict=False)  # warm-up on a corner
        for option in ("native", "vae_tiling"):
            if option == "vae_tiling":
                vae.enable_tiling(**(probe_tiles(vae) if m.tiny else {}))
            sync(device, reset_peak=True)
            start = time.perf_counter()
            try:
                videos[option] = vae.decode(latents, return_dict=False)[0]
            except torch.cuda.OutOfMemoryError as err:
                found[option] = {"status": "oom", "error": str(err)[:300]}
                continue
            sync(device)
            seconds = time.perf_counter() - start
            found[option] = {"status": "ok", "decode_s": seconds, "peak_gib": peak_gib(device)}
            found[option]["video_shape"] = list(videos[option].shape[2:])
    if len(videos) == 2:  # decoded in [-1, 1]: PSNR over that range
        tiled, whole = (videos[o].float() for o in ("vae_tiling", "native"))
        error = rms(tiled - whole)
        found["vae_tiling"]["call_rel"] = error / rms(whole)
        found["vae_tiling"]["psnr_db"] = math.inf if error == 0 else 20 * math.log10(2 / error)
    return found


@functools.cache
def probe_spec(key: str, steps: int):
    """The tiny registry entry of `key`'s family, at `steps` denoising steps."""
    tiny = registry()[f"tiny_{registry()[key].family}"]
    return tiny.with_generation(num_inference_steps=steps)


@functools.cache
def probe_run(key: str, option: str, steps: int) -> dict:
    spec = probe_spec(key, steps)
    marks = tuple(s for s in exactness.STEPS if s < steps) + (steps,)
    return exactness.trajectory(spec, OPTIONS[option], str(PROBE_IMAGE), steps=marks)


def probe(key: str, option: str, steps: int) -> dict:
    """The tiny pipeline's trajectory under `option` against the reference's
    (`vgi_models.exactness`): the classification's measured check."""
    if OPTIONS[option].get("offload"):
        raise Unavailable("on a CPU there is nothing to offload to")
    backend = OPTIONS[option].get("attention_backend", "native")
    if backend not in CPU_BACKENDS:
        raise Unavailable(f"attention backend {backend} needs CUDA")
    found = exactness.difference(probe_run(key, "native", steps), probe_run(key, option, steps))
    return found | {"exact": exactness.exact(found)}


def attempt(fn, *args) -> dict:
    """`fn(*args)` with a status: an error is reported and the other models still run. GPU
    memory is freed once the exception (which holds the frames) is gone."""
    try:
        result = {"status": "ok"} | fn(*args)
    except Unavailable as why:
        result = {"status": "unavailable", "error": str(why)[:300]}
    except Exception as err:  # noqa: BLE001
        traceback.print_exc(limit=-4)
        status = "oom" if isinstance(err, torch.cuda.OutOfMemoryError) else "error"
        result = {"status": status, "error": f"{type(err).__name__}: {err}"[:500]}
    free()
    return result


def free() -> None:
    """GPU memory of what is gone back to the device (a collection takes 0.5 s: GPU only)."""
    if torch.cuda.is_available():
        gc.collect()
        torch.cuda.empty_cache()


def per_video(key: str, entry: dict, option: str) -> dict:
    """One row: the seconds of one video under `option` alone (the reference runtime otherwise:
    native attention, eager, on the GPU, untiled), from the measured parts: the denoisers' load,
    the warm-up, `num_inference_steps` steps, DECODES decodes (LTX-2.3: its first stage)."""
    m, gen = plan(key, entry["scale"]), entry["plan"]
    denoise = entry["options"].get(option if option != "vae_tiling" else "native", {})
    decode = entry["vae"].get("vae_tiling" if option == "vae_tiling" else "native", {})
    compared = decode if option == "vae_tiling" else denoise
    load = entry["load"].get("load_s")
    failed = [
        part.get("status") for part in (compared, denoise, decode) if part.get("status") != "ok"
    ]
    row = {
        "model": key,
        "option": option,
        "class": APPROXIMATE if trajectory_runtime(OPTIONS[option]) else EXACT,
        "status": failed[0] if failed else "ok",
    }
    if failed or load is None:
        return row | {"call_rel": compared.get("call_rel")}
    parts = {
        "load_s": load * m.denoisers,
        "warmup_s": denoise["warmup_s"] if option == "compile" else 0.0,
        "denoise_s": m.gen["num_inference_steps"] * denoise["s_per_step"],
        "decode_s": DECODES * decode["decode_s"],
    }
    peaks = [p for p in (denoise["peak_gib"], decode["peak_gib"]) if p is not None]
    return (
        row
        | parts
        | {
            "video_s": sum(parts.values()),
            "peak_gib": max(peaks) if peaks else None,
            "mfu_pct": denoise["mfu_pct"],
            "call_rel": compared.get("call_rel"),
            "video": gen.get("video"),
        }
    )


def table(summary: dict) -> pd.DataFrame:
    """Every (model, option) row: `per_video`, and on the tiny scale the probe's figures."""
    rows = []
    for key, entry in summary["models"].items():
        if entry["plan"]["status"] != "ok":
            continue
        for option in entry["options_run"]:
            row = per_video(key, entry, option)
            found = entry.get("trajectory", {}).get(option, {})
            if found.get("status") == "ok":
                row |= {k: found[k] for k in ("trajectory", "video_levels", "exact")}
            rows.append(row)
    return pd.DataFrame(rows)


def official(summary: dict, rows: pd.DataFrame) -> str | None:
    """The published Wan2.2-I2V-A14B 720p figure beside ours, on an H100."""
    if "H100" not in summary["device"].split() or rows.empty:
        return None
    ours = rows[(rows["model"] == "wan22_i2v_a14b") & (rows["option"] == "native")]
    if ours.empty or "video_s" not in ours or pd.isna(ours["video_s"].iloc[0]):
        return None
    return (
        f"wan22_i2v_a14b, 720p, 81 frames, 40 steps, one H100: {ours['video_s'].iloc[0]:.1f} s "
        f"per video here; {OFFICIAL_H100_S} s and {OFFICIAL_H100_GB} GB in Wan-Video/Wan2.2's "
        "own table (its generate.py, offloading the model and the T5)"
    )


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", choices=("full", "tiny"), default="full")
    parser.add_argument("--steps", type=int, default=3, help="timed denoising steps per option")
    parser.add_argument("--models", nargs="+", choices=MODELS, default=list(MODELS))
    parser.add_argument("--options", nargs="+", choices=list(OPTIONS), help="default: the scale's")
    parser.add_argument("--probe-steps", type=int, default=40, help="tiny: the probe's steps")
    parser.add_argument("--json-out", type=Path, help="rewritten after every model")
    smoke = "CI: --scale tiny --steps 1 --probe-steps 2, the quick options"
    parser.add_argument("--smoke", action="store_true", help=smoke)
    args = parser.parse_args(argv)
    if args.smoke:  # the sizes shrink; flags given explicitly still win
        parser.set_defaults(scale="tiny", steps=1, probe_steps=2, options=SMOKE_OPTIONS)
        args = parser.parse_args(argv)
    tiny = args.scale == "tiny"
    if not tiny and not torch.cuda.is_available():
        sys.exit("--scale full needs a CUDA GPU; --scale tiny checks the script on the CPU")
    device, dtype = ("cpu", torch.float32) if tiny else ("cuda", torch.bfloat16)
    options = ["native", *(o for o in args.options or DEFAULT_OPTIONS[args.scale] if o != "native")]
    options.sort(key=lambda o: o == "offload")  # it leaves the weights offloaded: last
    if tiny:
        torch.set_num_threads(1)  # tiny ops: more threads only wait at barriers (5x slower)
    summary = {
        "scale": args.scale,
        "device": "cpu" if tiny else torch.cuda.get_device_name(),
        "steps": args.steps,
        "peak_tflops": peak_tflops(device),
        "versions": {"torch": torch.__version__, "diffusers": diffusers.__version__},
        "models": {},
    }
    for key in args.models:
        entry = summary["models"][key] = {"scale": args.scale, "options_run": options}
        entry["plan"] = attempt(describe, key, args.scale)
        print(f"[{key}] plan: {entry['plan']}", flush=True)
        if entry["plan"]["status"] != "ok":
            continue
        built = attempt(lambda m: {"denoiser": Denoiser(m, device, dtype)}, plan(key, args.scale))
        denoiser = built.pop("denoiser", None)
        entry["load"] = attempt(denoiser.load) if denoiser else built
        entry["options"] = {}
        for option in options:
            if option != "vae_tiling":
                entry["options"][option] = (
                    attempt(denoiser.measure, option, args.steps) if denoiser else built
                )
                print(f"[{key}] {option}: {entry['options'][option]}", flush=True)
        del denoiser  # its memory, before the VAE's
        free()
        entry["vae"] = attempt(run_vae, plan(key, args.scale), device, dtype)
        print(f"[{key}] VAE: {entry['vae']}", flush=True)
        if tiny:
            entry["trajectory"] = {o: attempt(probe, key, o, args.probe_steps) for o in options}
            print(f"[{key}] trajectory: {entry['trajectory']}", flush=True)
        write(summary, args.json_out)
    rows = table(summary)
    summary["rows"] = rows.to_dict("records")
    print(rows.to_string(index=False, float_format="{:.4g}".format))
    if line := official(summary, rows):
        print(line)
        summary["official"] = line
    write(summary, args.json_out)
    print(json.dumps(summary))
    return summary


def write(summary: dict, path: Path | None) -> None:
    if path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(summary, indent=1) + "\n")


if __name__ == "__main__":
    main()
