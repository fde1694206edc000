"""Full-size denoiser step time, FLOP rate and memory, and one tiled 720p VAE decode, per family.

Wan2.2-I2V-A14B (one expert), HunyuanVideo-1.5 I2V 720p and LTX-2.3 are built from their released
configs with random weights (meta device, then allocated on the GPU in bf16) and their
transformer's `forward` is timed on inputs shaped as the diffusers pipeline passes them at the
study's settings (config/models.yaml). A step is what the pipeline runs per denoising step: Wan
and HunyuanVideo-1.5 CFG = 2 batch-1 calls; LTX-2.3 = cond+uncond batched, an STG call and a
modality-isolation call. FLOPs per call of batch b, with d = heads * head_dim:

    b * (sum over block Linears of 2 * |W| * tokens of its stream
         + sum over attentions of 4 * n_query * n_key * d)

(embedders, norms, RoPE and the output projection, about 1%, left out). Forward hooks count the
block Linears' FLOPs in the warm-up call: `linear_check` (counted / formula) must be 1.

    timeout 570 python bench/gpu_generate.py --steps 2 --json-out "$OUT/gpu_generate.json"

`--scale tiny` runs the same code on the CPU with the project's tiny builds (a logic check;
`--smoke` is `--scale tiny --steps 1`, CI's run: no figure of the real models). The last output
line is the JSON summary; `--json-out` rewrites it after each model.
"""

from __future__ import annotations

import argparse
import functools
import gc
import json
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
from vgi_models.families.hunyuan15_attention import use_prefix_attention  # noqa: E402
from vgi_models.registry import load_registry  # noqa: E402

PEAK_TFLOPS = 790.0  # H200 bf16 dense, as briefed (NVIDIA lists 989 for SXM, 835 for NVL)
TIMESTEP = 500.0  # mid-trajectory; the value does not change the work
GIB = 2**30
MODELS = ("ltx23_i2v", "wan22_i2v_a14b", "hunyuan15_i2v")  # registry keys, quickest first


@dataclass(frozen=True)
class Call:
    """One kind of transformer call in a denoising step."""

    name: str
    batch: int
    per_step: int
    stg_blocks: tuple[int, ...] = ()  # LTX: self-attention skipped (STG)
    isolate: bool = False  # LTX: audio<->video attention off (modality guidance)


def square_tiles(**sizes) -> dict:
    """`enable_tiling()` arguments, each size for height and width (small, so tiny VAEs tile)."""
    return {f"tile_{k}_{side}": v for k, v in sizes.items() for side in ("height", "width")}


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
        self.tiling = self.tiny_tiling if scale == "tiny" else {}
        self.gen = spec.generation
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
    tiny_tiling = square_tiles(sample_min=128, sample_stride=96)

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
    # Its tiled decode keeps 3/4 of each tile uncropped: tiles must be 16x larger in pixels.
    tiny_tiling = square_tiles(sample_min=64, latent_min=4)
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
    tiny_tiling = square_tiles(sample_min=32, sample_stride=16)
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
def plan(key: str, scale: str) -> Model:
    """Registry entry `key` (at tiny scale: its family's `tiny_*` entry), nothing allocated yet."""
    registry = load_registry(yaml.safe_load((REPO / "config/models.yaml").read_text()))
    family = registry[key].family
    return FAMILIES[family](registry[f"tiny_{family}" if scale == "tiny" else key], scale)


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


def run_denoiser(m: Model, device: str, dtype: torch.dtype, steps: int) -> dict:
    sync(device, reset_peak=True)
    model = m.prepare(materialize(build_empty(m.transformer_cls, m.transformer), device, dtype))
    inputs = {c.name: m.inputs(c, {"device": device, "dtype": dtype}) for c in m.calls}
    with torch.inference_mode():
        # warm-up: each kind of call once, its Linear FLOPs counted against the formula's
        check = {
            c.name: counted_linear_flops(model, m.blocks(model), inputs[c.name])
            / m.flops[c.name]["linear"]
            for c in m.calls
        }
        sync(device)
        start = time.perf_counter()
        for _ in range(steps):
            for c in m.calls:
                for _ in range(c.per_step):
                    model(**inputs[c.name], return_dict=False)
        sync(device)
        s_step = (time.perf_counter() - start) / steps
    tflops = m.step_tflop() / s_step
    return {
        "s_per_step": s_step,
        "tflops": tflops,
        "pct_peak": 100 * tflops / PEAK_TFLOPS,
        "weights_gib": sum(x.numel() * x.element_size() for x in model.parameters()) / GIB,
        "peak_gib": peak_gib(device),
        "linear_check": check,
    }


def run_vae(m: Model, device: str, dtype: torch.dtype) -> dict:
    vae_dtype = torch.float32 if m.vae_fp32 else dtype
    vae = materialize(build_empty(m.vae_cls, m.vae), device, vae_dtype)
    vae.enable_tiling(**m.tiling)
    latents = torch.randn((1, *m.latent), device=device, dtype=vae_dtype)
    with torch.inference_mode():
        vae.decode(latents[:, :, :2, :8, :8], return_dict=False)  # warm-up on a corner
        sync(device, reset_peak=True)
        start = time.perf_counter()
        video = vae.decode(latents, return_dict=False)[0]
        sync(device)
    seconds = time.perf_counter() - start
    return {"decode_s": seconds, "peak_gib": peak_gib(device), "video_shape": list(video.shape[2:])}


def attempt(fn, *args) -> dict:
    """`fn(*args)` with a status: an error is reported and the other models still run. Memory is
    freed once the exception (which holds the frames) is gone."""
    try:
        result = {"status": "ok"} | fn(*args)
    except Exception as err:  # noqa: BLE001
        traceback.print_exc(limit=-4)
        status = "oom" if isinstance(err, torch.cuda.OutOfMemoryError) else "error"
        result = {"status": status, "error": f"{type(err).__name__}: {err}"[:500]}
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
    return result


def tables(models: dict) -> str:
    """One row per call, then one column per model (the per-call figures left to the first)."""
    calls = [
        {"model": key, "call": name}
        | c
        | {"linear_check": e.get("denoiser", {}).get("linear_check", {}).get(name)}
        for key, e in models.items()
        for name, c in e["plan"].get("calls", {}).items()
    ]
    per_model = pd.json_normalize(list(models.values())).set_axis(list(models)).T
    per_model = per_model[~per_model.index.str.contains(r"\.calls\.|linear_check")]
    short = per_model.map(lambda v: f"{v:.4g}" if isinstance(v, float) else v)
    calls = pd.DataFrame(calls).to_string(index=False, float_format="{:.4g}".format)
    return f"{calls}\n\n{short.to_string()}"


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", choices=("full", "tiny"), default="full")
    parser.add_argument("--steps", type=int, default=3, help="timed denoising steps per model")
    parser.add_argument("--models", nargs="+", choices=MODELS, default=list(MODELS))
    parser.add_argument("--json-out", type=Path, help="rewritten after every model")
    smoke = "CI: --scale tiny --steps 1 (the tiny builds on the CPU: checks the code, not a GPU)"
    parser.add_argument("--smoke", action="store_true", help=smoke)
    args = parser.parse_args(argv)
    if args.smoke:  # the sizes shrink; flags given explicitly still win
        parser.set_defaults(scale="tiny", steps=1)
        args = parser.parse_args(argv)
    tiny = args.scale == "tiny"
    if not tiny and not torch.cuda.is_available():
        sys.exit("--scale full needs a CUDA GPU; --scale tiny checks the script on the CPU")
    device, dtype = ("cpu", torch.float32) if tiny else ("cuda", torch.bfloat16)
    if tiny:
        torch.set_num_threads(1)  # tiny ops: more threads only wait at barriers (5x slower)
    summary = {
        "scale": args.scale,
        "device": "cpu" if tiny else torch.cuda.get_device_name(),
        "steps": args.steps,
        "peak_tflops": PEAK_TFLOPS,
        "versions": {"torch": torch.__version__, "diffusers": diffusers.__version__},
        "models": {},
    }
    for key in args.models:
        entry = summary["models"][key] = {"plan": attempt(describe, key, args.scale)}
        print(f"[{key}] plan: {entry['plan']}", flush=True)
        if entry["plan"]["status"] == "ok":
            entry["denoiser"] = attempt(
                run_denoiser, plan(key, args.scale), device, dtype, args.steps
            )
            print(f"[{key}] denoiser: {entry['denoiser']}", flush=True)
            entry["vae"] = attempt(run_vae, plan(key, args.scale), device, dtype)
            print(f"[{key}] VAE: {entry['vae']}", flush=True)
        if args.json_out:
            args.json_out.parent.mkdir(parents=True, exist_ok=True)
            args.json_out.write_text(json.dumps(summary, indent=1) + "\n")
    print(tables(summary["models"]))
    print(json.dumps(summary))
    return summary


if __name__ == "__main__":
    main()
