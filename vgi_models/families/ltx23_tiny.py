"""A tiny randomly initialised LTX-2.3 I2V pipeline (video, audio and, for a two-stage setting,
the latent upsampler), built from config alone (`source: tiny` in the model registry): the
architecture of `ltx23`, small enough for CPU tests."""

from __future__ import annotations

import torch
from diffusers import (
    AutoencoderKLLTX2Audio,
    AutoencoderKLLTX2Video,
    FlowMatchEulerDiscreteScheduler,
    LTX2ImageToVideoPipeline,
    LTX2VideoTransformer3DModel,
)
from diffusers.pipelines.ltx2 import LTX2TextConnectors, LTX2VocoderWithBWE
from diffusers.pipelines.ltx2.latent_upsampler import LTX2LatentUpsamplerModel
from transformers import (
    Gemma3Config,
    Gemma3ForConditionalGeneration,
    Gemma3TextConfig,
    GemmaTokenizer,
    SiglipVisionConfig,
)

from vgi_models.families.ltx23 import LTX23

TEXT_DIM = 16  # tiny Gemma hidden size
VIDEO_DIM, AUDIO_DIM = 16, 8  # tiny transformer widths (= its text cross-attention widths)


def _scheduler():
    """The released LTX-2 scheduler configuration (resolution-dependent shift): a tiny pipeline
    has no checkpoint's own."""
    return FlowMatchEulerDiscreteScheduler(
        use_dynamic_shifting=True,
        base_shift=0.95,
        max_shift=2.05,
        base_image_seq_len=1024,
        max_image_seq_len=4096,
        shift_terminal=0.1,
    )


def _tiny_tokenizer() -> GemmaTokenizer:
    """A character-level Gemma tokenizer held in memory (no hub files)."""
    specials = ["<pad>", "<eos>", "<bos>", "<unk>", "<mask>", "\u2581"]
    vocab = {tok: i for i, tok in enumerate(specials + [chr(c) for c in range(33, 127)])}
    return GemmaTokenizer(vocab=vocab, merges=[])


def build_tiny(family: LTX23, generation: dict) -> LTX2ImageToVideoPipeline:
    """A randomly initialised LTX-2.3 pipeline, built from config alone."""
    tokenizer = _tiny_tokenizer()
    torch.manual_seed(0)
    text_encoder = Gemma3ForConditionalGeneration(
        Gemma3Config(
            text_config=Gemma3TextConfig(
                vocab_size=len(tokenizer),
                hidden_size=TEXT_DIM,
                intermediate_size=32,
                num_hidden_layers=2,
                num_attention_heads=2,
                num_key_value_heads=1,
                head_dim=8,
            ),
            vision_config=SiglipVisionConfig(
                hidden_size=8,
                intermediate_size=16,
                num_hidden_layers=1,
                num_attention_heads=2,
                image_size=16,
                patch_size=4,
            ),
            mm_tokens_per_image=4,
        )
    )
    torch.manual_seed(0)
    connectors = LTX2TextConnectors(
        caption_channels=TEXT_DIM,
        text_proj_in_factor=3,  # Gemma layers + embeddings
        video_connector_num_attention_heads=2,
        video_connector_attention_head_dim=VIDEO_DIM // 2,
        video_connector_num_layers=1,
        video_connector_num_learnable_registers=8,
        video_gated_attn=True,
        audio_connector_num_attention_heads=2,
        audio_connector_attention_head_dim=AUDIO_DIM // 2,
        audio_connector_num_layers=1,
        audio_connector_num_learnable_registers=8,
        audio_gated_attn=True,
        rope_type="split",
        per_modality_projections=True,
        video_hidden_dim=VIDEO_DIM,
        audio_hidden_dim=AUDIO_DIM,
        proj_bias=True,
    )
    torch.manual_seed(0)
    vae = AutoencoderKLLTX2Video(
        latent_channels=8,
        block_out_channels=(8,),
        decoder_block_out_channels=(8,),
        layers_per_block=(1,),
        decoder_layers_per_block=(1, 1),
        spatio_temporal_scaling=(True,),
        decoder_spatio_temporal_scaling=(True,),
        decoder_inject_noise=(False, False),
        downsample_type=("spatiotemporal",),
        upsample_residual=(False,),
        upsample_factor=(1,),
        patch_size=4,  # 8x spatial compression with one scaling block: few tokens, fast on CPU
        decoder_causal=False,
    )
    torch.manual_seed(0)
    transformer = LTX2VideoTransformer3DModel(
        in_channels=8,
        out_channels=8,
        num_attention_heads=2,
        attention_head_dim=VIDEO_DIM // 2,
        cross_attention_dim=VIDEO_DIM,
        vae_scale_factors=(
            vae.temporal_compression_ratio,
            vae.spatial_compression_ratio,
            vae.spatial_compression_ratio,
        ),
        gated_attn=True,
        cross_attn_mod=True,
        audio_in_channels=4,  # audio latent channels x latent mel bins
        audio_out_channels=4,
        audio_num_attention_heads=2,
        audio_attention_head_dim=AUDIO_DIM // 2,
        audio_cross_attention_dim=AUDIO_DIM,
        audio_gated_attn=True,
        audio_cross_attn_mod=True,
        num_layers=2,
        caption_channels=TEXT_DIM,
        rope_type="split",
        use_prompt_embeddings=False,
        perturbed_attn=True,
    )
    torch.manual_seed(0)
    audio_vae = AutoencoderKLLTX2Audio(
        base_channels=4,
        ch_mult=(1,),
        num_res_blocks=1,
        resolution=32,
        latent_channels=2,
        mel_bins=8,
    )
    torch.manual_seed(0)
    vocoder = LTX2VocoderWithBWE(
        in_channels=16,  # stereo x mel bins
        hidden_channels=8,
        upsample_kernel_sizes=[4, 4],
        upsample_factors=[2, 2],
        resnet_kernel_sizes=[3],
        resnet_dilations=[[1, 3, 5]],
        bwe_in_channels=16,
        bwe_hidden_channels=8,
        bwe_upsample_kernel_sizes=[4, 4],
        bwe_upsample_factors=[2, 4],  # hop_length x output/input sampling rate
        bwe_resnet_kernel_sizes=[3],
        bwe_resnet_dilations=[[1, 3, 5]],
        filter_length=16,
        hop_length=4,
        window_length=16,
        num_mel_channels=8,
        input_sampling_rate=16000,
        output_sampling_rate=32000,
    )
    pipe = LTX2ImageToVideoPipeline(
        scheduler=_scheduler(),
        vae=vae.eval(),
        audio_vae=audio_vae.eval(),
        text_encoder=text_encoder.eval(),
        tokenizer=tokenizer,
        connectors=connectors.eval(),
        transformer=transformer.eval(),
        vocoder=vocoder.eval(),
    )
    if "stage_2" in generation:
        torch.manual_seed(0)
        pipe.latent_upsampler = LTX2LatentUpsamplerModel(
            in_channels=8, mid_channels=32, num_blocks_per_stage=1
        ).eval()
    return family.finish(pipe, generation)
