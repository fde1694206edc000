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

from vgi_models.families.common import (  # noqa: F401
    checkpoint_latents,
    final_latents,
    refine,
    to_frames,
)
from vgi_models.families.hunyuan15_attention import use_prefix_attention

TEXT_DIM, GLYPH_DIM, IMAGE_DIM, LATENT_CHANNELS = 16, 32, 12, 4
# The tiny Qwen tokenizer is byte-level with no merges: one token per byte. Its template
# keeps only the user turn, so no system-prompt tokens need cropping.
USER_ONLY = (
    "{% for m in messages %}{% if m['role'] == 'user' %}{{ m['content'] }}{% endif %}{% endfor %}"
)


def build_tiny(family: str, generation: dict) -> HunyuanVideo15ImageToVideoPipeline:
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
    return _configure(pipe, generation)


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
