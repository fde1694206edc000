"""A tiny randomly initialised HunyuanVideo-1.5 I2V pipeline, built from config alone
(`source: tiny` in the model registry): the architecture of `hunyuan15`, small enough for CPU
tests, finished by the same `HunyuanVideo15.finish` as real weights."""

from __future__ import annotations

import torch
from diffusers import (
    AutoencoderKLHunyuanVideo15,
    FlowMatchEulerDiscreteScheduler,
    HunyuanVideo15ImageToVideoPipeline,
    HunyuanVideo15Transformer3DModel,
)
from diffusers.guiders import ClassifierFreeGuidance
from tokenizers.pre_tokenizers import ByteLevel
from transformers import (
    ByT5Tokenizer,
    Qwen2_5_VLTextConfig,
    Qwen2_5_VLTextModel,
    Qwen2Tokenizer,
    SiglipImageProcessor,
    SiglipVisionConfig,
    SiglipVisionModel,
    T5Config,
    T5EncoderModel,
)

from vgi_models.families.hunyuan15 import HunyuanVideo15

TEXT_DIM, GLYPH_DIM, IMAGE_DIM, LATENT_CHANNELS = 16, 32, 12, 4
# The tiny Qwen tokenizer is byte-level with no merges: one token per byte. Its template
# keeps only the user turn, so no system-prompt tokens need cropping.
USER_ONLY = (
    "{% for m in messages %}{% if m['role'] == 'user' %}{{ m['content'] }}{% endif %}{% endfor %}"
)


def build_tiny(family: HunyuanVideo15, generation: dict) -> HunyuanVideo15ImageToVideoPipeline:
    """A randomly initialised pipeline of the I2V architecture, built from config alone."""
    vocab = {"<|endoftext|>": 0} | {c: i + 1 for i, c in enumerate(sorted(ByteLevel.alphabet()))}
    torch.manual_seed(0)
    text_encoder = Qwen2_5_VLTextModel(
        Qwen2_5_VLTextConfig(
            vocab_size=len(vocab),
            hidden_size=TEXT_DIM,
            intermediate_size=16,
            num_hidden_layers=2,
            num_attention_heads=2,
            num_key_value_heads=2,
            rope_parameters={"mrope_section": [1, 1, 2], "rope_type": "default", "rope_theta": 1e6},
            bos_token_id=None,
            eos_token_id=None,
        )
    )
    torch.manual_seed(0)
    text_encoder_2 = T5EncoderModel(
        T5Config(
            vocab_size=384,  # ByT5: 256 bytes, 3 specials, 125 sentinels
            d_model=GLYPH_DIM,
            d_kv=8,
            d_ff=32,
            num_layers=1,
            num_heads=2,
            relative_attention_num_buckets=8,
        )
    )
    torch.manual_seed(0)
    image_encoder = SiglipVisionModel(
        SiglipVisionConfig(
            hidden_size=IMAGE_DIM,
            intermediate_size=16,
            num_hidden_layers=1,
            num_attention_heads=2,
            image_size=32,
            patch_size=8,
        )
    )
    torch.manual_seed(0)
    vae = AutoencoderKLHunyuanVideo15(
        latent_channels=LATENT_CHANNELS,
        block_out_channels=(8, 8, 8, 8),
        layers_per_block=1,
        spatial_compression_ratio=16,
        temporal_compression_ratio=4,
        downsample_match_channel=False,
        upsample_match_channel=False,
    )
    torch.manual_seed(0)
    transformer = HunyuanVideo15Transformer3DModel(
        in_channels=2 * LATENT_CHANNELS + 1,  # noise + image condition + first-frame mask
        out_channels=LATENT_CHANNELS,
        num_attention_heads=2,
        attention_head_dim=8,
        num_layers=2,
        num_refiner_layers=1,
        mlp_ratio=2.0,
        text_embed_dim=TEXT_DIM,
        text_embed_2_dim=GLYPH_DIM,
        image_embed_dim=IMAGE_DIM,
        rope_axes_dim=(2, 2, 4),
        task_type="i2v",
    )
    pipe = HunyuanVideo15ImageToVideoPipeline(
        text_encoder=text_encoder.eval(),
        tokenizer=Qwen2Tokenizer(vocab=vocab, merges=[], chat_template=USER_ONLY),
        transformer=transformer.eval(),
        vae=vae.eval(),
        scheduler=FlowMatchEulerDiscreteScheduler(),
        text_encoder_2=text_encoder_2.eval(),
        tokenizer_2=ByT5Tokenizer(),
        guider=ClassifierFreeGuidance(),
        image_encoder=image_encoder.eval(),
        feature_extractor=SiglipImageProcessor(size={"height": 32, "width": 32}),
    )
    pipe.prompt_template_encode_start_idx = 0
    pipe.tokenizer_2_max_length = 8  # ByT5 glyph tokens (quoted text in the prompt)
    return family.finish(pipe, generation)
