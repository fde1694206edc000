"""Tiny randomly initialised image-to-video pipelines of diffusers' own classes, built from config
alone, for the generic family (`diffusers_i2v`, `source: tiny`): each pipeline's architecture
small enough to run a few steps on a CPU in seconds."""

from __future__ import annotations

import torch
from diffusers import (
    AutoencoderKLCogVideoX,
    CogVideoXDDIMScheduler,
    CogVideoXImageToVideoPipeline,
    CogVideoXTransformer3DModel,
    SkyReelsV2ImageToVideoPipeline,
    SkyReelsV2Transformer3DModel,
    UniPCMultistepScheduler,
)
from transformers import T5Config, T5EncoderModel

from vgi_models.families.wan_tiny import (
    TEXT_DIM,
    _tiny_image_encoder,
    _tiny_text_encoder,
    _tiny_tokenizer,
    _tiny_vae,
)

# CogVideoX: 64 x 112 px -> 8 x 14 latents (VAE x8); learned position embeddings of that size
COGVIDEOX_LATENT_SIZE = (8, 14)


def skyreels_v2() -> SkyReelsV2ImageToVideoPipeline:
    """SkyReels-V2 I2V: Wan's VAE and UMT5, a CLIP image encoder, flow-matching UniPC."""
    tokenizer = _tiny_tokenizer()
    image_encoder, image_processor = _tiny_image_encoder()
    torch.manual_seed(1)
    transformer = SkyReelsV2Transformer3DModel(
        patch_size=(1, 2, 2),
        num_attention_heads=2,
        attention_head_dim=12,
        in_channels=36,  # noise (16) + image condition (16) + first-frame mask (4)
        out_channels=16,
        text_dim=TEXT_DIM,
        freq_dim=256,
        ffn_dim=32,
        num_layers=2,
        image_dim=image_encoder.config.hidden_size,
        added_kv_proj_dim=24,
        rope_max_seq_len=32,
    ).eval()
    scheduler = UniPCMultistepScheduler(
        prediction_type="flow_prediction", use_flow_sigmas=True, flow_shift=5.0
    )
    return SkyReelsV2ImageToVideoPipeline(
        tokenizer=tokenizer,
        text_encoder=_tiny_text_encoder(len(tokenizer)),
        image_encoder=image_encoder,
        image_processor=image_processor,
        transformer=transformer,
        vae=_tiny_vae(),
        scheduler=scheduler,
    )


def cogvideox() -> CogVideoXImageToVideoPipeline:
    """CogVideoX-5b-I2V: T5, CogVideoX's VAE (x8 spatial, x4 temporal), v-prediction DDIM."""
    tokenizer = _tiny_tokenizer()
    torch.manual_seed(0)
    text_encoder = T5EncoderModel(
        T5Config(vocab_size=len(tokenizer), d_model=TEXT_DIM, d_kv=16, d_ff=64, num_layers=2,
                 num_heads=2, relative_attention_num_buckets=8)
    ).eval()  # fmt: skip
    torch.manual_seed(0)
    vae = AutoencoderKLCogVideoX(
        down_block_types=("CogVideoXDownBlock3D",) * 4,
        up_block_types=("CogVideoXUpBlock3D",) * 4,
        block_out_channels=(8, 8, 8, 8),
        latent_channels=4,
        layers_per_block=1,
        norm_num_groups=2,
        temporal_compression_ratio=4,
    ).eval()
    torch.manual_seed(1)
    height, width = COGVIDEOX_LATENT_SIZE
    transformer = CogVideoXTransformer3DModel(
        num_attention_heads=2,
        attention_head_dim=16,  # rotary: 1/4 to time, 3/8 to each side, all even
        in_channels=8,  # noise (4) + image latent (4)
        out_channels=4,
        time_embed_dim=8,
        text_embed_dim=TEXT_DIM,
        num_layers=2,
        sample_height=height,
        sample_width=width,
        sample_frames=9,
        patch_size=2,
        temporal_compression_ratio=4,
        max_text_seq_length=16,
        use_rotary_positional_embeddings=True,
        use_learned_positional_embeddings=True,
    ).eval()
    scheduler = CogVideoXDDIMScheduler(
        prediction_type="v_prediction", rescale_betas_zero_snr=True, timestep_spacing="trailing"
    )
    return CogVideoXImageToVideoPipeline(
        tokenizer=tokenizer,
        text_encoder=text_encoder,
        vae=vae,
        transformer=transformer,
        scheduler=scheduler,
    )


BUILDERS = {
    "SkyReelsV2ImageToVideoPipeline": skyreels_v2,
    "CogVideoXImageToVideoPipeline": cogvideox,
}


def build_tiny(family, generation: dict):
    """The tiny pipeline of the entry's `pipeline` class, checked and set up by the family."""
    if family.pipeline not in BUILDERS:
        raise ValueError(f"no tiny {family.pipeline} (tiny pipelines: {', '.join(BUILDERS)})")
    return family.finish(BUILDERS[family.pipeline](), generation)
