"""Tiny randomly initialised image-to-video pipelines of diffusers' own classes, built from config
alone, for the generic family (`diffusers_i2v`, `source: tiny`): each pipeline's architecture
small enough to run a few steps on a CPU in seconds."""

from __future__ import annotations

import torch
from diffusers import (
    AutoencoderKLCogVideoX,
    AutoencoderKLHunyuanVideo,
    CogVideoXDDIMScheduler,
    CogVideoXImageToVideoPipeline,
    CogVideoXTransformer3DModel,
    FlowMatchEulerDiscreteScheduler,
    HunyuanSkyreelsImageToVideoPipeline,
    HunyuanVideoTransformer3DModel,
    SkyReelsV2ImageToVideoPipeline,
    SkyReelsV2Transformer3DModel,
    UniPCMultistepScheduler,
)
from transformers import (
    CLIPTextConfig,
    CLIPTextModel,
    CLIPTokenizer,
    LlamaConfig,
    LlamaModel,
    LlamaTokenizer,
    T5Config,
    T5EncoderModel,
)

from vgi_models.families.wan_tiny import (
    TEXT_DIM,
    _tiny_image_encoder,
    _tiny_text_encoder,
    _tiny_tokenizer,
    _tiny_transformer,
    _tiny_vae,
)

# CogVideoX: 64 x 112 px -> 8 x 14 latents (VAE x8); learned position embeddings of that size
COGVIDEOX_LATENT_SIZE = (8, 14)


def skyreels_v2() -> SkyReelsV2ImageToVideoPipeline:
    """SkyReels-V2 I2V: Wan's VAE and UMT5, a CLIP image encoder, flow-matching UniPC."""
    tokenizer = _tiny_tokenizer()
    image_encoder, image_processor = _tiny_image_encoder()
    transformer = _tiny_transformer(1, with_image=True, kind=SkyReelsV2Transformer3DModel)
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


def hunyuan_skyreels() -> HunyuanSkyreelsImageToVideoPipeline:
    """SkyReels-V1 on HunyuanVideo: Llama hidden states and CLIP's pooled text, HunyuanVideo's
    VAE (x8 spatial, x4 temporal), the image latent concatenated on the channels, flow-matching
    Euler. Both tokenizers are character-level: the pipeline's prompt template crops its first
    95 tokens (Llama-3's count for the system part), leaving here the system part's tail before
    the prompt, so `max_sequence_length` covers both."""
    chars = [chr(c) for c in range(32, 127)] + ["\n"]
    headers = ["<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"]
    vocab = {t: i for i, t in enumerate(["<unk>", "<s>", "</s>", *headers, "\u2581", *chars])}
    tokenizer = LlamaTokenizer(
        vocab=vocab, merges=[], pad_token="</s>", padding_side="right",
        additional_special_tokens=headers,
    )  # fmt: skip
    clip_vocab = {"<|startoftext|>": 0, "<|endoftext|>": 1}
    for c in chars[1:-1]:
        clip_vocab |= {c: len(clip_vocab), f"{c}</w>": len(clip_vocab) + 1}
    tokenizer_2 = CLIPTokenizer(vocab=clip_vocab, merges=[])
    torch.manual_seed(0)
    text_encoder = LlamaModel(
        LlamaConfig(vocab_size=len(vocab), hidden_size=TEXT_DIM, intermediate_size=32,
                    num_hidden_layers=3, num_attention_heads=2, num_key_value_heads=2,
                    pad_token_id=vocab["</s>"], bos_token_id=1, eos_token_id=2)
    ).eval()  # fmt: skip
    torch.manual_seed(0)
    text_encoder_2 = CLIPTextModel(
        CLIPTextConfig(vocab_size=len(clip_vocab), hidden_size=16, intermediate_size=32,
                       projection_dim=16, num_hidden_layers=2, num_attention_heads=2,
                       bos_token_id=0, eos_token_id=1, pad_token_id=1)
    ).eval()  # fmt: skip
    torch.manual_seed(0)
    vae = AutoencoderKLHunyuanVideo(
        latent_channels=4,
        block_out_channels=(8, 8, 8, 8),
        layers_per_block=1,
        norm_num_groups=4,
    ).eval()
    torch.manual_seed(1)
    transformer = HunyuanVideoTransformer3DModel(
        in_channels=8,  # noise (4) + image latent (4)
        out_channels=4,
        num_attention_heads=2,
        attention_head_dim=8,
        num_layers=1,
        num_single_layers=1,
        num_refiner_layers=1,
        patch_size=2,
        text_embed_dim=TEXT_DIM,
        pooled_projection_dim=16,
        rope_axes_dim=(2, 2, 4),
    ).eval()
    return HunyuanSkyreelsImageToVideoPipeline(
        text_encoder=text_encoder,
        tokenizer=tokenizer,
        transformer=transformer,
        vae=vae,
        scheduler=FlowMatchEulerDiscreteScheduler(shift=7.0),
        text_encoder_2=text_encoder_2,
        tokenizer_2=tokenizer_2,
    )


BUILDERS = {
    "SkyReelsV2ImageToVideoPipeline": skyreels_v2,
    "CogVideoXImageToVideoPipeline": cogvideox,
    "HunyuanSkyreelsImageToVideoPipeline": hunyuan_skyreels,
}


def build_tiny(family, generation: dict):
    """The tiny pipeline of the entry's `pipeline` class, checked and set up by the family."""
    if family.pipeline not in BUILDERS:
        raise ValueError(f"no tiny {family.pipeline} (tiny pipelines: {', '.join(BUILDERS)})")
    return family.finish(BUILDERS[family.pipeline](), generation)
