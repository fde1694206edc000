"""Wan2.1-I2V-14B and Wan2.2-I2V-A14B through diffusers' `WanImageToVideoPipeline`.

Wan2.2-A14B has two experts: `transformer` (high noise, t >= boundary_ratio * 1000) and
`transformer_2` (low noise), and no image encoder. Wan2.1 has one transformer and a CLIP
image encoder whose features enter through `added_kv_proj_dim`.

Wan2.1's attention processor splits the cross-attention context into image and text tokens
by assuming exactly 512 text tokens (`WanAttnProcessor`: "512 is the context length of the
text encoder, hardcoded for now"). Any other `max_sequence_length` would silently mix image
and text tokens, so a Wan2.1 pipeline (one whose transformer has `added_kv_proj_dim`) rejects
a `max_sequence_length` other than 512, and the pipeline's default of 512 is what it runs.
"""

from __future__ import annotations

import numpy as np
import torch
from diffusers import UniPCMultistepScheduler, WanImageToVideoPipeline

from vgi_models.families.common import (  # noqa: F401
    LOOP_TENSORS,
    checkpoint_latents,
    final_latents,
    refine,
    to_frames,
)

WAN21_TEXT_LENGTH = 512  # hard-coded in diffusers' WanAttnProcessor when added_kv_proj_dim is set


def load(source: str, generation: dict, dtype: torch.dtype) -> WanImageToVideoPipeline:
    """Real weights from a local directory or a hub id already in the local cache.

    The VAE and (Wan2.1) the CLIP image encoder stay in float32, as in diffusers' and Wan's
    reference scripts; the transformers and the text encoder take `dtype`.
    """
    dtypes = {"default": dtype, "vae": torch.float32, "image_encoder": torch.float32}
    pipe = WanImageToVideoPipeline.from_pretrained(source, dtype=dtypes, local_files_only=True)
    if "boundary_ratio" in generation:
        pipe.register_to_config(boundary_ratio=generation["boundary_ratio"])
    pipe.scheduler = _scheduler(pipe.scheduler, generation)
    _check(pipe, generation)
    return pipe


def _check(pipe: WanImageToVideoPipeline, generation: dict) -> None:
    """Reject settings the built architecture cannot honour (before any denoising)."""
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


def _scheduler(base, generation: dict) -> UniPCMultistepScheduler:
    """Wan's released flow-matching UniPC solver with the configured shift."""
    return UniPCMultistepScheduler.from_config(
        base.config,
        prediction_type="flow_prediction",
        use_flow_sigmas=True,
        flow_shift=generation["flow_shift"],
    )


def call_kwargs(generation: dict) -> dict:
    """Pipeline arguments from the model's generation settings."""
    keys = ("height", "width", "num_frames", "num_inference_steps", "guidance_scale")
    kwargs = {k: generation[k] for k in keys}
    kwargs["negative_prompt"] = generation.get("negative_prompt", "")
    if "guidance_scale_2" in generation:
        kwargs["guidance_scale_2"] = generation["guidance_scale_2"]
    if "max_sequence_length" in generation:
        kwargs["max_sequence_length"] = generation["max_sequence_length"]
    return kwargs


@torch.no_grad()
def decode(pipe: WanImageToVideoPipeline, latents: torch.Tensor) -> np.ndarray:
    """Normalised latents -> uint8 frames [F, H, W, 3], exactly as the pipeline decodes."""
    vae = pipe.vae
    latents = latents.to(device=pipe._execution_device, dtype=vae.dtype)
    shape = (1, vae.config.z_dim, 1, 1, 1)
    mean = torch.tensor(vae.config.latents_mean).view(shape).to(latents.device, latents.dtype)
    inv_std = 1.0 / torch.tensor(vae.config.latents_std).view(shape).to(
        latents.device, latents.dtype
    )
    video = vae.decode(latents / inv_std + mean, return_dict=False)[0]
    return to_frames(pipe, video)
