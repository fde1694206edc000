"""Tiny randomly initialised Qwen-Image-Edit pipelines, built from config alone (`source: tiny`
in the model registry): the architecture of `qwen_image_edit`, small enough for CPU tests.

The text encoder is a two-layer Qwen2.5-VL whose vision tower reads 8 px patches; its
tokenizer is byte-level BPE without merges (one token per UTF-8 byte) plus the chat and vision
special tokens of the pipelines' prompt templates, so any prompt encodes.
"""

from __future__ import annotations

import torch
from diffusers import (
    AutoencoderKLQwenImage,
    FlowMatchEulerDiscreteScheduler,
    QwenImageTransformer2DModel,
)
from tokenizers import AddedToken, pre_tokenizers
from transformers import (
    Qwen2_5_VLConfig,
    Qwen2_5_VLForConditionalGeneration,
    Qwen2Tokenizer,
    Qwen2VLImageProcessorPil,
)

from vgi_models.image_families.qwen_image_edit import QwenImageEdit
from vgi_models.image_families.qwen_processor import ImageQwen2VLProcessor, recorded_as_checkpoint

SPECIAL = (
    "<|im_start|>",
    "<|im_end|>",
    "<|vision_start|>",
    "<|vision_end|>",
    "<|image_pad|>",
    "<|video_pad|>",
)
TEXT_DIM = 32
LATENT_CHANNELS = 4
PATCH, MERGE = 8, 2  # the vision tower's patch and the merge of 2x2 patches into one token


def _tiny_tokenizer() -> Qwen2Tokenizer:
    """One token per byte (the byte-level alphabet, no merges), then `<|endoftext|>` and
    `SPECIAL`, each one token."""
    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    vocab = {piece: i for i, piece in enumerate(alphabet)} | {"<|endoftext|>": len(alphabet)}
    tokenizer = Qwen2Tokenizer(vocab=vocab, merges=[])
    tokenizer.add_special_tokens(
        {"additional_special_tokens": [AddedToken(t, special=True) for t in SPECIAL]}
    )
    return tokenizer


def _tiny_processor(tokenizer: Qwen2Tokenizer, kind=ImageQwen2VLProcessor):
    """A `kind` processor (Qwen2-VL's or Qwen3-VL's, without torchvision) that gives the vision
    tower the input image at most 32x32 pixels of area: a handful of tokens."""
    factor = PATCH * MERGE
    images = Qwen2VLImageProcessorPil(
        patch_size=PATCH,
        temporal_patch_size=2,
        merge_size=MERGE,
        min_pixels=factor * factor,
        max_pixels=4 * factor * factor,
    )
    return kind(images, tokenizer)


def _vision_token_ids(tokenizer: Qwen2Tokenizer) -> dict[str, int]:
    """A Qwen-VL config's image, video and vision start/end token ids in `tokenizer`."""
    return {
        f"{name}_token_id": tokenizer.convert_tokens_to_ids(f"<|{token}|>")
        for name, token in (
            ("image", "image_pad"),
            ("video", "video_pad"),
            ("vision_start", "vision_start"),
            ("vision_end", "vision_end"),
        )
    }


def _tiny_text_encoder(tokenizer: Qwen2Tokenizer) -> Qwen2_5_VLForConditionalGeneration:
    ids = _vision_token_ids(tokenizer)
    config = Qwen2_5_VLConfig(
        text_config={
            "vocab_size": len(tokenizer),
            "hidden_size": TEXT_DIM,
            "intermediate_size": 64,
            "num_hidden_layers": 2,
            "num_attention_heads": 2,
            "num_key_value_heads": 1,
            "max_position_embeddings": 4096,
            "rope_parameters": {
                "rope_type": "default",
                "rope_theta": 10000.0,
                "mrope_section": [2, 3, 3],
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
            "window_size": 2 * PATCH * MERGE,
            "fullatt_block_indexes": [1],
            "out_hidden_size": TEXT_DIM,
        },
        **ids,
    )
    torch.manual_seed(0)
    return Qwen2_5_VLForConditionalGeneration(config).eval()


def _tiny_vae() -> AutoencoderKLQwenImage:
    torch.manual_seed(1)
    return AutoencoderKLQwenImage(
        base_dim=4,
        z_dim=LATENT_CHANNELS,
        dim_mult=[1, 1, 1, 1],
        num_res_blocks=1,
        temperal_downsample=[False, True, True],  # three 2x downsamplings: 8 px per latent
        latents_mean=[0.0] * LATENT_CHANNELS,
        latents_std=[1.0] * LATENT_CHANNELS,
    ).eval()


def _tiny_transformer() -> QwenImageTransformer2DModel:
    torch.manual_seed(2)
    return QwenImageTransformer2DModel(
        patch_size=2,
        in_channels=4 * LATENT_CHANNELS,  # 2x2 latent patches
        out_channels=LATENT_CHANNELS,
        num_layers=2,
        attention_head_dim=16,
        num_attention_heads=2,
        joint_attention_dim=TEXT_DIM,
        axes_dims_rope=(4, 6, 6),
    ).eval()


def build_tiny(family: QwenImageEdit, generation: dict):
    """A randomly initialised pipeline of the variant's class, the same weights every time."""
    tokenizer = _tiny_tokenizer()
    pipe = family.pipeline_class()(
        scheduler=FlowMatchEulerDiscreteScheduler(),
        vae=_tiny_vae(),
        text_encoder=_tiny_text_encoder(tokenizer),
        tokenizer=tokenizer,
        processor=_tiny_processor(tokenizer),
        transformer=_tiny_transformer(),
    )
    return recorded_as_checkpoint(pipe)
