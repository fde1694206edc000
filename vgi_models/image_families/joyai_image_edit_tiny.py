"""A tiny randomly initialised JoyAI-Image-Edit pipeline, built from config alone (`source: tiny`
in the model registry): the architecture of `joyai_image_edit`, small enough for CPU tests.

The text encoder is a two-layer Qwen3-VL whose two-block vision tower reads 8 px patches (its
first block's features fed to the text layers, as Qwen3-VL's deepstack does); the tokenizer is
Qwen-Image-Edit's tiny byte-level one. The pipeline edits at its buckets of about 1024x1024
pixels whatever the size asked, so the tiny Wan VAE takes 2x2-pixel patches and compresses
16 px into a latent (Wan 2.2's arrangement; the pipeline reads the factor from the VAE's
config) instead of Wan 2.1's 8 px: at 8 px its full-size layers and the attention over 16k
latents would take seconds on CPU. An image takes about 1.5 s on one thread.
"""

from __future__ import annotations

import torch
from diffusers import (
    AutoencoderKLWan,
    FlowMatchEulerDiscreteScheduler,
    JoyImageEditTransformer3DModel,
)
from transformers import (
    Qwen2Tokenizer,
    Qwen3VLConfig,
    Qwen3VLForConditionalGeneration,
)

from vgi_models.image_families.joyai_image_edit import JoyAIImageEdit
from vgi_models.image_families.qwen_image_edit_tiny import (
    MERGE,
    PATCH,
    _tiny_processor,
    _tiny_tokenizer,
    _vision_token_ids,
)
from vgi_models.image_families.qwen_processor import ImageQwen3VLProcessor, recorded_as_checkpoint

TEXT_DIM = 32
LATENT_CHANNELS = 16  # as Wan 2.1's VAE


def _tiny_text_encoder(tokenizer: Qwen2Tokenizer) -> Qwen3VLForConditionalGeneration:
    ids = _vision_token_ids(tokenizer)
    config = Qwen3VLConfig(
        text_config={
            "vocab_size": len(tokenizer),
            "hidden_size": TEXT_DIM,
            "intermediate_size": 64,
            "num_hidden_layers": 2,
            "num_attention_heads": 2,
            "num_key_value_heads": 1,
            "head_dim": 16,
            "max_position_embeddings": 4096,
            "rope_parameters": {
                "rope_type": "default",
                "rope_theta": 10000.0,
                "mrope_section": [2, 3, 3],
                "mrope_interleaved": True,
            },
            "bos_token_id": tokenizer.convert_tokens_to_ids("<|endoftext|>"),
            "eos_token_id": tokenizer.convert_tokens_to_ids("<|im_end|>"),
        },
        vision_config={
            "depth": 2,
            "hidden_size": 16,
            "intermediate_size": 32,
            "num_heads": 2,
            "patch_size": PATCH,
            "spatial_merge_size": MERGE,
            "temporal_patch_size": 2,
            "out_hidden_size": TEXT_DIM,
            "num_position_embeddings": 16,  # a learned 4x4 grid, interpolated to the image's
            "deepstack_visual_indexes": [0],
        },
        **ids,
    )
    torch.manual_seed(0)
    return Qwen3VLForConditionalGeneration(config).eval()


def _tiny_vae() -> AutoencoderKLWan:
    torch.manual_seed(1)
    return AutoencoderKLWan(
        base_dim=3,
        z_dim=LATENT_CHANNELS,
        dim_mult=[1, 1, 1, 1],
        num_res_blocks=1,
        temperal_downsample=[False, True, True],  # with the 2x2 patches: 16 px per latent
        patch_size=2,
        in_channels=3 * 2 * 2,
        out_channels=3 * 2 * 2,
        scale_factor_spatial=16,
    ).eval()


def _tiny_transformer() -> JoyImageEditTransformer3DModel:
    torch.manual_seed(2)
    return JoyImageEditTransformer3DModel(
        patch_size=[1, 2, 2],
        in_channels=LATENT_CHANNELS,
        hidden_size=32,
        num_attention_heads=2,
        text_dim=TEXT_DIM,
        mlp_width_ratio=2.0,
        num_layers=1,
        rope_dim_list=[4, 6, 6],  # one head's 16 dims over time, height and width
    ).eval()


def build_tiny(family: JoyAIImageEdit, generation: dict):
    """A randomly initialised `JoyImageEditPipeline`, the same weights every time."""
    tokenizer = _tiny_tokenizer()
    pipe = family.pipeline_class()(
        scheduler=FlowMatchEulerDiscreteScheduler(),
        vae=_tiny_vae(),
        text_encoder=_tiny_text_encoder(tokenizer),
        tokenizer=tokenizer,
        transformer=_tiny_transformer(),
        processor=_tiny_processor(tokenizer, ImageQwen3VLProcessor),
    )
    return recorded_as_checkpoint(pipe)
