"""Wan2.1-I2V-14B and Wan2.2-I2V-A14B through diffusers' `WanImageToVideoPipeline`.

Wan2.2-A14B has two experts: `transformer` (high noise, t >= boundary_ratio * 1000) and
`transformer_2` (low noise), and no image encoder. Wan2.1 has one transformer and a CLIP
image encoder whose features enter through `added_kv_proj_dim`.
"""

from __future__ import annotations

import numpy as np
import torch
from diffusers import (
    AutoencoderKLWan,
    UniPCMultistepScheduler,
    WanImageToVideoPipeline,
    WanTransformer3DModel,
)
from transformers import T5Tokenizer, UMT5Config, UMT5EncoderModel

TEXT_DIM = 32


def _tiny_tokenizer() -> T5Tokenizer:
    """A character-level T5 tokenizer held in memory (no hub files)."""
    pieces = [("<pad>", 0.0), ("</s>", 0.0), ("<unk>", 0.0), ("\u2581", -1.0)]
    pieces += [(chr(c), -2.0) for c in range(33, 127)]
    return T5Tokenizer(vocab=pieces, extra_ids=0)


def _tiny_transformer(seed: int) -> WanTransformer3DModel:
    torch.manual_seed(seed)
    return WanTransformer3DModel(
        patch_size=(1, 2, 2),
        num_attention_heads=2,
        attention_head_dim=12,
        in_channels=36,  # noise (16) + image condition (16) + first-frame mask (4)
        out_channels=16,
        text_dim=TEXT_DIM,
        freq_dim=256,
        ffn_dim=32,
        num_layers=2,
        cross_attn_norm=True,
        qk_norm="rms_norm_across_heads",
        rope_max_seq_len=32,
    )


def build_tiny(variant: str, generation: dict) -> WanImageToVideoPipeline:
    """A randomly initialised pipeline of the variant's architecture, built from config alone."""
    if variant != "wan22":
        raise ValueError(f"no tiny build for Wan variant {variant!r}")
    tokenizer = _tiny_tokenizer()
    torch.manual_seed(0)
    text_encoder = UMT5EncoderModel(
        UMT5Config(
            vocab_size=len(tokenizer),
            d_model=TEXT_DIM,
            d_kv=16,
            d_ff=64,
            num_layers=2,
            num_heads=2,
            relative_attention_num_buckets=8,
        )
    )
    torch.manual_seed(0)
    vae = AutoencoderKLWan(
        base_dim=3,
        z_dim=16,
        dim_mult=[1, 1, 1, 1],
        num_res_blocks=1,
        temperal_downsample=[False, True, True],
    )
    return WanImageToVideoPipeline(
        tokenizer=tokenizer,
        text_encoder=text_encoder.eval(),
        vae=vae.eval(),
        scheduler=_scheduler(UniPCMultistepScheduler(), generation),
        transformer=_tiny_transformer(1).eval(),
        transformer_2=_tiny_transformer(2).eval(),
        boundary_ratio=generation["boundary_ratio"],
    )


def load(source: str, generation: dict, dtype: torch.dtype) -> WanImageToVideoPipeline:
    """Real weights from a local directory or a hub id already in the local cache."""
    pipe = WanImageToVideoPipeline.from_pretrained(source, torch_dtype=dtype, local_files_only=True)
    if "boundary_ratio" in generation:
        pipe.register_to_config(boundary_ratio=generation["boundary_ratio"])
    pipe.scheduler = _scheduler(pipe.scheduler, generation)
    return pipe


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


def final_latents(pipe: WanImageToVideoPipeline, output) -> torch.Tensor:
    """The pipeline's `output_type="latent"` result: normalised latents."""
    return output.frames


def checkpoint_latents(pipe, state: torch.Tensor, final: torch.Tensor) -> torch.Tensor:
    """A recorded state is already a full normalised latent."""
    return state


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
    frames = pipe.video_processor.postprocess_video(video, output_type="np")[0]
    return (frames * 255).astype(np.uint8)
