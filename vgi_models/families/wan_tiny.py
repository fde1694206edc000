"""Tiny randomly initialised Wan2.1 and Wan2.2 I2V pipelines, built from config alone
(`source: tiny` in the model registry): the architectures of `wan`, small enough for CPU tests."""

from __future__ import annotations

import torch
from diffusers import (
    AutoencoderKLWan,
    UniPCMultistepScheduler,
    WanImageToVideoPipeline,
    WanTransformer3DModel,
)
from transformers import (
    CLIPImageProcessor,
    CLIPVisionConfig,
    CLIPVisionModel,
    T5Tokenizer,
    UMT5Config,
    UMT5EncoderModel,
)

from vgi_models.families.wan import Wan

TEXT_DIM = 32
HEADS, HEAD_DIM = 2, 12
IMAGE_DIM = 16  # hidden size of the tiny CLIP vision tower
IMAGE_SIZE = 32


def _tiny_tokenizer() -> T5Tokenizer:
    """A character-level T5 tokenizer held in memory (no hub files)."""
    pieces = [("<pad>", 0.0), ("</s>", 0.0), ("<unk>", 0.0), ("\u2581", -1.0)]
    pieces += [(chr(c), -2.0) for c in range(33, 127)]
    return T5Tokenizer(vocab=pieces, extra_ids=0)


def _tiny_text_encoder(vocab_size: int) -> UMT5EncoderModel:
    torch.manual_seed(0)
    return UMT5EncoderModel(
        UMT5Config(
            vocab_size=vocab_size,
            d_model=TEXT_DIM,
            d_kv=16,
            d_ff=64,
            num_layers=2,
            num_heads=2,
            relative_attention_num_buckets=8,
        )
    ).eval()


def _tiny_vae() -> AutoencoderKLWan:
    torch.manual_seed(0)
    return AutoencoderKLWan(
        base_dim=3,
        z_dim=16,
        dim_mult=[1, 1, 1, 1],
        num_res_blocks=1,
        temperal_downsample=[False, True, True],
    ).eval()


def _tiny_transformer(
    seed: int, with_image: bool = False, kind=WanTransformer3DModel, in_channels: int = 36
):
    """Wan2.2 expert, or with `with_image` the Wan2.1 transformer (CLIP tokens via added K/V);
    `kind`: a class of Wan's architecture (SkyReels-V2's); `in_channels` 16: the latent alone
    (Wan2.2-TI2V-5B's)."""
    image = {"image_dim": IMAGE_DIM, "added_kv_proj_dim": HEADS * HEAD_DIM} if with_image else {}
    torch.manual_seed(seed)
    return kind(
        patch_size=(1, 2, 2),
        num_attention_heads=HEADS,
        attention_head_dim=HEAD_DIM,
        in_channels=in_channels,  # 36: noise (16) + image condition (16) + first-frame mask (4)
        out_channels=16,
        text_dim=TEXT_DIM,
        freq_dim=256,
        ffn_dim=32,
        num_layers=2,
        cross_attn_norm=True,
        qk_norm="rms_norm_across_heads",
        rope_max_seq_len=32,
        **image,
    ).eval()


def _tiny_image_encoder() -> tuple[CLIPVisionModel, CLIPImageProcessor]:
    """A two-layer CLIP vision tower on 32 px crops (17 image tokens) and its processor."""
    torch.manual_seed(3)
    encoder = CLIPVisionModel(
        CLIPVisionConfig(
            hidden_size=IMAGE_DIM,
            intermediate_size=32,
            projection_dim=IMAGE_DIM,
            num_hidden_layers=2,
            num_attention_heads=2,
            image_size=IMAGE_SIZE,
            patch_size=8,
        )
    ).eval()
    processor = CLIPImageProcessor(
        size={"shortest_edge": IMAGE_SIZE}, crop_size={"height": IMAGE_SIZE, "width": IMAGE_SIZE}
    )
    return encoder, processor


def build_tiny(family: Wan, generation: dict) -> WanImageToVideoPipeline:
    """A randomly initialised pipeline of the variant's architecture, built from config alone."""
    tokenizer = _tiny_tokenizer()
    shared = {
        "tokenizer": tokenizer,
        "text_encoder": _tiny_text_encoder(len(tokenizer)),
        "vae": _tiny_vae(),
        "scheduler": UniPCMultistepScheduler(),  # `finish` sets Wan's flow-matching solver
    }
    if family.name == "wan22":
        pipe = WanImageToVideoPipeline(
            **shared,
            transformer=_tiny_transformer(1),
            transformer_2=_tiny_transformer(2),
            boundary_ratio=generation["boundary_ratio"],
        )
    else:
        image_encoder, image_processor = _tiny_image_encoder()
        pipe = WanImageToVideoPipeline(
            **shared,
            transformer=_tiny_transformer(1, with_image=True),
            image_encoder=image_encoder,
            image_processor=image_processor,
        )
    return family.finish(pipe, generation)
