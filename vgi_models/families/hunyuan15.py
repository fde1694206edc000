"""HunyuanVideo-1.5 I2V through diffusers' `HunyuanVideo15ImageToVideoPipeline`.

The pipeline takes no height, width or guidance scale: it picks the output size from the
input image's aspect ratio and its `target_size` (the side of a square of the same area),
and classifier-free guidance lives on its `guider` component. Both are set here from the
generation settings, as is an attention processor that never builds diffusers' dense S x S
mask (`hunyuan15_attention`). Its `output_type="latent"` result is the latent times the VAE's
`scaling_factor`.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from diffusers import FlowMatchEulerDiscreteScheduler, HunyuanVideo15ImageToVideoPipeline

from vgi_models.families.common import (  # noqa: F401
    LOOP_TENSORS,
    checkpoint_latents,
    final_latents,
    refine,
    to_frames,
)
from vgi_models.families.hunyuan15_attention import use_prefix_attention


def load(source: str, generation: dict, dtype: torch.dtype) -> HunyuanVideo15ImageToVideoPipeline:
    """Real weights from a local directory or a hub id already in the local cache."""
    pipe = HunyuanVideo15ImageToVideoPipeline.from_pretrained(
        source, dtype=dtype, local_files_only=True
    )
    return _configure(pipe, generation)


def _configure(pipe, generation: dict) -> HunyuanVideo15ImageToVideoPipeline:
    """Scheduler shift, guidance scale, output size, prompt length, and attention without the
    dense S x S mask (`hunyuan15_attention`)."""
    use_prefix_attention(pipe.transformer)
    pipe.scheduler = FlowMatchEulerDiscreteScheduler.from_config(
        pipe.scheduler.config, shift=generation["flow_shift"]
    )
    pipe.guider = pipe.guider.new(guidance_scale=generation["guidance_scale"])
    height, width = generation["height"], generation["width"]
    pipe.target_size = round(math.sqrt(height * width))
    chosen = pipe.video_processor.calculate_default_height_width(9, 16, pipe.target_size)
    if chosen != (height, width):
        raise ValueError(
            f"HunyuanVideo-1.5 makes {chosen[1]}x{chosen[0]} (not {width}x{height}) from a 16:9 "
            f"image: choose a size its buckets of {pipe.vae_scale_factor_spatial} px can give"
        )
    if "max_sequence_length" in generation:
        pipe.tokenizer_max_length = generation["max_sequence_length"]
    return pipe


def call_kwargs(generation: dict) -> dict:
    """Pipeline arguments from the model's generation settings (size and CFG are set on it)."""
    return {
        "num_frames": generation["num_frames"],
        "num_inference_steps": generation["num_inference_steps"],
        "negative_prompt": generation.get("negative_prompt", ""),
    }


@torch.no_grad()
def decode(pipe: HunyuanVideo15ImageToVideoPipeline, latents: torch.Tensor) -> np.ndarray:
    """Scaled latents -> uint8 frames [F, H, W, 3], exactly as the pipeline decodes."""
    vae = pipe.vae
    latents = latents.to(device=pipe._execution_device, dtype=vae.dtype)
    video = vae.decode(latents / vae.config.scaling_factor, return_dict=False)[0]
    return to_frames(pipe, video)
