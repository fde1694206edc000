"""Wan2.1-I2V-14B and Wan2.2-I2V-A14B through diffusers' `WanImageToVideoPipeline`.

Wan2.2-A14B has two experts: `transformer` (high noise, t >= boundary_ratio * 1000) and
`transformer_2` (low noise), and no image encoder. Wan2.1 has one transformer and a CLIP
image encoder whose features enter through `added_kv_proj_dim`.

Wan2.1's attention processor splits the cross-attention context into image and text tokens
by assuming exactly 512 text tokens (`WanAttnProcessor`: "512 is the context length of the
text encoder, hardcoded for now"). Any other `max_sequence_length` would silently mix image
and text tokens, so a Wan2.1 pipeline (one whose transformer has `added_kv_proj_dim`) rejects
a `max_sequence_length` other than 512, and the pipeline's default of 512 is what it runs.

LoRA: Wan2.2's `high_noise_lora.safetensors` goes into `transformer`,
`low_noise_lora.safetensors` into `transformer_2`; Wan2.1 has one file for `transformer`.
A DiffSynth key names a module of DiffSynth's Wan DiT (`WAN_MODULES`, `vgi_models.lora`).
"""

from __future__ import annotations

import re

from vgi_models.families.base import Family

WAN21_TEXT_LENGTH = 512  # hard-coded in diffusers' WanAttnProcessor when added_kv_proj_dim is set
_ATTENTION = {"q": "to_q", "k": "to_k", "v": "to_v", "o": "to_out.0"}
# DiffSynth's Wan DiT module -> diffusers' WanTransformer3DModel module (within blocks.{i}).
WAN_MODULES = {
    **{f"self_attn.{o}": f"attn1.{c}" for o, c in _ATTENTION.items()},
    **{f"cross_attn.{o}": f"attn2.{c}" for o, c in _ATTENTION.items()},
    "cross_attn.k_img": "attn2.add_k_proj",
    "cross_attn.v_img": "attn2.add_v_proj",
    "ffn.0": "ffn.net.0.proj",
    "ffn.2": "ffn.net.2",
}
# What VBVR (and DiffSynth's Wan scripts) train: q,k,v,o of both attentions, ffn.0, ffn.2.
WAN_TARGETS = tuple(m for m in WAN_MODULES if not m.endswith("_img"))
_WAN_MODULE = re.compile(r"blocks\.\d+\.(?:" + "|".join(re.escape(m) for m in WAN_MODULES) + ")")
_TWO_EXPERTS = {
    "transformer": "high_noise_lora.safetensors",
    "transformer_2": "low_noise_lora.safetensors",
}


class Wan(Family):
    """`wan21` (one transformer, CLIP image features) or `wan22` (two experts)."""

    def __init__(self, name: str) -> None:
        if name not in ("wan21", "wan22"):
            raise ValueError(f"no Wan variant {name!r}")
        self.name = name
        if name == "wan22":
            self.denoisers = ("transformer", "transformer_2")
            self.lora_files = {"diffsynth": _TWO_EXPERTS, "diffusers": _TWO_EXPERTS}
        else:
            self.lora_files = {
                "diffsynth": {"transformer": "lora.safetensors"},
                "diffusers": {"transformer": "pytorch_lora_weights.safetensors"},
            }

    def load(self, source: str, generation: dict, dtype):
        """The VAE and (Wan2.1) the CLIP image encoder stay in float32, as in diffusers' and
        Wan's reference scripts; the transformers and the text encoder take `dtype`."""
        import torch
        from diffusers import WanImageToVideoPipeline

        dtypes = {"default": dtype, "vae": torch.float32, "image_encoder": torch.float32}
        pipe = WanImageToVideoPipeline.from_pretrained(source, dtype=dtypes, local_files_only=True)
        return self.finish(pipe, generation)

    def finish(self, pipe, generation: dict):
        """Wan's released flow-matching UniPC solver with the configured shift, the expert
        boundary; settings the built architecture cannot honour are rejected."""
        from diffusers import UniPCMultistepScheduler

        if "boundary_ratio" in generation:
            pipe.register_to_config(boundary_ratio=generation["boundary_ratio"])
        pipe.scheduler = UniPCMultistepScheduler.from_config(
            pipe.scheduler.config,
            prediction_type="flow_prediction",
            use_flow_sigmas=True,
            flow_shift=generation["flow_shift"],
        )
        two_experts = pipe.transformer_2 is not None
        if not two_experts:
            for key in ("boundary_ratio", "guidance_scale_2"):
                if key in generation:
                    raise ValueError(f"generation.{key} needs Wan2.2's two experts; this is Wan2.1")
        elif pipe.config.boundary_ratio is None:
            raise ValueError("a two-expert Wan pipeline needs generation.boundary_ratio")
        if pipe.transformer.config.added_kv_proj_dim is not None:
            length = generation.get("max_sequence_length", WAN21_TEXT_LENGTH)
            if length != WAN21_TEXT_LENGTH:
                raise ValueError(
                    f"generation.max_sequence_length is {length}, but Wan2.1's attention "
                    f"assumes {WAN21_TEXT_LENGTH} text tokens (drop the key or set it to 512)"
                )
        return pipe

    def call_kwargs(self, generation: dict) -> dict:
        keys = ("height", "width", "num_frames", "num_inference_steps", "guidance_scale")
        kwargs = {k: generation[k] for k in keys}
        kwargs["negative_prompt"] = generation.get("negative_prompt", "")
        for key in ("guidance_scale_2", "max_sequence_length"):
            if key in generation:
                kwargs[key] = generation[key]
        return kwargs

    def lora_modules(self, model) -> list[tuple[str, str]]:
        return [
            (f"blocks.{i}.{ours}", f"blocks.{i}.{WAN_MODULES[ours]}")
            for i in range(len(model.blocks))
            for ours in WAN_TARGETS
        ]

    def diffsynth_module_problem(self, module: str) -> str | None:
        if _WAN_MODULE.fullmatch(module):
            return None
        return f"names no Wan DiT module (expected blocks.<i>.<{'|'.join(WAN_MODULES)}>)"
