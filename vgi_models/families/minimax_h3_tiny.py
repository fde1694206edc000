"""A tiny randomly initialised MiniMax-H3 modular pipeline (transformer, video and audio VAEs,
Qwen3-VL conditioner, byte-level tokenizer, processor), built from config alone (`source: tiny`):
the architecture of `minimax_h3`, small enough for CPU tests. The canvas multiple is 8 (VAE 4 x
patch 2); the frame count keeps the real model's 5 s minimum at 24 fps (124 frames, 37 latent)."""

from __future__ import annotations

import torch
from diffusers import (
    AutoencoderKLMiniMaxH3,
    AutoencoderKLMiniMaxH3Audio,
    MiniMaxH3Scheduler,
    MiniMaxH3Transformer3DModel,
)
from diffusers.modular_pipelines import MiniMaxH3Blocks
from transformers import (
    Qwen2TokenizerFast,
    Qwen3VLConfig,
    Qwen3VLForConditionalGeneration,
    Qwen3VLProcessor,
)
from transformers.convert_slow_tokenizer import bytes_to_unicode
from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil

from vgi_models.families.minimax_h3 import MiniMaxH3
from vgi_models.families.minimax_h3_pipeline import MiniMaxH3ImageToVideo

TEXT_DIM = 16  # tiny Qwen3-VL hidden size (= the transformer's text width)
# The pipeline reads hidden_states[50] and refuses a conditioner without more than 50 layers.
TEXT_LAYERS = 51
SPECIALS = ["<|endoftext|>", "<|vision_start|>", "<|vision_end|>", "<|image_pad|>", "<|video_pad|>"]


class ImageProcessorOnly(Qwen3VLProcessor):
    """Qwen3-VL's processor without its video processor, which needs torchvision (not installed
    here); an image-to-video request processes no video."""

    def check_argument_for_proper_class(self, argument_name, argument):
        if argument_name == "video_processor" and argument is None:
            return None
        return super().check_argument_for_proper_class(argument_name, argument)


def _tokenizer() -> Qwen2TokenizerFast:
    """A byte-level BPE tokenizer with no merges (one token a byte) and Qwen's vision tokens."""
    vocab = {tok: i for i, tok in enumerate([*bytes_to_unicode().values(), *SPECIALS])}
    tokenizer = Qwen2TokenizerFast(vocab=vocab, merges=[])
    tokenizer.add_special_tokens({"additional_special_tokens": SPECIALS[1:]})
    return tokenizer


def _text_encoder(tokenizer) -> Qwen3VLForConditionalGeneration:
    ids = {f"{name}_token_id": tokenizer.convert_tokens_to_ids(f"<|{token}|>") for name, token in (
        ("image", "image_pad"), ("video", "video_pad"),
        ("vision_start", "vision_start"), ("vision_end", "vision_end"),
    )}  # fmt: skip
    rope = {"rope_type": "default", "rope_theta": 10000.0, "mrope_section": [2, 1, 1]}
    config = Qwen3VLConfig(
        text_config=dict(
            vocab_size=len(tokenizer),
            hidden_size=TEXT_DIM,
            intermediate_size=32,
            num_hidden_layers=TEXT_LAYERS,
            num_attention_heads=2,
            num_key_value_heads=1,
            head_dim=8,
            rope_parameters=rope | {"mrope_interleaved": True},
        ),
        vision_config=dict(
            depth=1,
            hidden_size=16,
            intermediate_size=32,
            num_heads=2,
            out_hidden_size=TEXT_DIM,
            patch_size=16,
            spatial_merge_size=2,
            temporal_patch_size=2,
            num_position_embeddings=16,
            deepstack_visual_indexes=[0],
        ),
        **ids,
    )
    torch.manual_seed(0)
    return Qwen3VLForConditionalGeneration(config).eval()


def build_tiny(family: MiniMaxH3, generation: dict) -> MiniMaxH3ImageToVideo:
    """A randomly initialised MiniMax-H3 pipeline, built from config alone."""
    tokenizer = _tokenizer()
    image_processor = Qwen2VLImageProcessorPil(
        patch_size=16, merge_size=2, temporal_patch_size=2, min_pixels=32 * 32, max_pixels=64 * 64
    )
    processor = ImageProcessorOnly(
        image_processor=image_processor, tokenizer=tokenizer, video_processor=None
    )
    torch.manual_seed(0)
    vae = AutoencoderKLMiniMaxH3(
        latent_channels=4,
        block_out_channels=(8, 16),
        layers_per_block=1,
        spatial_downsample_factors=(2, 2),
        temporal_downsample_factors=(2, 2),
        norm_num_groups=8,
        decoder_num_layers=1,
        decoder_num_attention_heads=2,
        decoder_attention_head_dim=8,
        decoder_num_register_tokens=2,
        decoder_ffn_mult=2,
        latents_mean=(0.0,) * 4,
        latents_std=(1.0,) * 4,
    )
    torch.manual_seed(0)
    audio_vae = AutoencoderKLMiniMaxH3Audio(
        encoder_dim=4,
        encoder_rates=(2, 2),
        latent_dim=32,
        latent_channels=8,
        num_attention_heads=2,
        decoder_dim=16,
        decoder_rates=(2, 2),
        decoder_kernel_sizes=(4, 4),
        resblock_kernel_sizes=(3,),
        resblock_dilation_sizes=((1, 3),),
        sampling_rate=160,  # 40 latents a second x hop 4
        latents_mean=[0.0] * 8,
        latents_std=[1.0] * 8,
    )
    torch.manual_seed(0)
    transformer = MiniMaxH3Transformer3DModel(
        num_attention_heads=2,
        attention_head_dim=16,
        hidden_size=24,
        num_layers=2,
        num_refiner_layers=1,
        ffn_dim=32,
        in_channels=4,
        audio_in_channels=8,
        patch_size=(1, 2, 2),
        text_dim=TEXT_DIM,
        freq_dim=8,
        time_embed_hidden_dim=24,
        time_embed_dim=16,
        rope_freq_dim=2,
    )
    modular = MiniMaxH3Blocks().init_pipeline()
    modular.update_components(
        transformer=transformer.eval(),
        vae=vae.eval(),
        audio_vae=audio_vae.eval(),
        text_encoder=_text_encoder(tokenizer),
        tokenizer=tokenizer,
        processor=processor,
        scheduler=MiniMaxH3Scheduler(shift=12.0),  # the released video and audio shifts
        audio_scheduler=MiniMaxH3Scheduler(shift=3.0),
    )
    return family.finish(MiniMaxH3ImageToVideo(modular), generation)
