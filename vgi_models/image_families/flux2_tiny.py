"""A tiny randomly initialised FLUX.2 pipeline, built from config alone (`source: tiny` in the
model registry): the architecture of `flux2`, small enough for CPU tests.

The text encoder is a Mistral3 (a Pixtral vision tower, never called without prompt
upsampling) with 30 narrow layers, so that the pipeline's default hidden-state layers (10, 20,
30) exist. Its processor is a `PixtralProcessor` over a byte-level BPE tokenizer without merges
(one token per UTF-8 byte) plus Mistral's control tokens, and a chat template in Mistral's
format for the system, user and assistant turns the pipeline writes.
"""

from __future__ import annotations

import torch
from diffusers import AutoencoderKLFlux2, FlowMatchEulerDiscreteScheduler, Flux2Transformer2DModel
from tokenizers import Tokenizer, decoders, models, pre_tokenizers
from transformers import (
    Mistral3Config,
    Mistral3ForConditionalGeneration,
    PreTrainedTokenizerFast,
)

from vgi_models.image_families.flux2 import Flux2
from vgi_models.image_families.flux2_processor import PromptProcessor, recorded_as_checkpoint

CONTROL = ("<unk>", "<s>", "</s>", "<pad>", "[INST]", "[/INST]", "[SYSTEM_PROMPT]")
CONTROL += ("[/SYSTEM_PROMPT]", "[IMG]", "[IMG_BREAK]", "[IMG_END]")
# Mistral's turns: a message's text parts joined, an image part as one [IMG] (the processor
# expands it to the image's patch grid).
CHAT_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}"
    "{% set parts = message['content'] if message['content'] is not string"
    " else [{'type': 'text', 'text': message['content']}] %}"
    "{% set text = namespace(value='') %}{% for part in parts %}"
    "{% set text.value = text.value + ('[IMG]' if part['type'] == 'image' else part['text']) %}"
    "{% endfor %}"
    "{% if message['role'] == 'system' %}[SYSTEM_PROMPT]{{ text.value }}[/SYSTEM_PROMPT]"
    "{% elif message['role'] == 'user' %}[INST]{{ text.value }}[/INST]"
    "{% else %}{{ text.value }}{{ eos_token }}{% endif %}{% endfor %}"
)
TEXT_DIM, TEXT_LAYERS = 16, 30
OUT_LAYERS = 3  # hidden states stacked into the prompt embedding (10, 20 and 30)
LATENT_CHANNELS = 4
PATCH = 8  # the vision tower's patch


def _tiny_tokenizer() -> PreTrainedTokenizerFast:
    """One token per byte (the byte-level alphabet, no merges), then `CONTROL`, each one
    token."""
    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    backend = Tokenizer(models.BPE({piece: i for i, piece in enumerate(alphabet)}, merges=[]))
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    backend.decoder = decoders.ByteLevel()
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend,
        unk_token="<unk>",
        bos_token="<s>",
        eos_token="</s>",
        pad_token="<pad>",
    )
    tokenizer.add_special_tokens({"additional_special_tokens": list(CONTROL[4:])})
    return tokenizer


def _tiny_text_encoder(tokenizer: PreTrainedTokenizerFast) -> Mistral3ForConditionalGeneration:
    config = Mistral3Config(
        text_config={
            "model_type": "mistral",
            "vocab_size": len(tokenizer),
            "hidden_size": TEXT_DIM,
            "intermediate_size": 32,
            "num_hidden_layers": TEXT_LAYERS,
            "num_attention_heads": 2,
            "num_key_value_heads": 1,
            "head_dim": TEXT_DIM // 2,
            "max_position_embeddings": 1024,
            "sliding_window": None,
            "bos_token_id": tokenizer.bos_token_id,
            "eos_token_id": tokenizer.eos_token_id,
            "pad_token_id": tokenizer.pad_token_id,
        },
        vision_config={
            "model_type": "pixtral",
            "hidden_size": 16,
            "intermediate_size": 32,
            "num_hidden_layers": 1,
            "num_attention_heads": 2,
            "head_dim": 8,
            "patch_size": PATCH,
            "image_size": 4 * PATCH,
        },
        image_token_index=tokenizer.convert_tokens_to_ids("[IMG]"),
        spatial_merge_size=1,
    )
    torch.manual_seed(0)
    return Mistral3ForConditionalGeneration(config).eval()


def _tiny_vae() -> AutoencoderKLFlux2:
    """Four blocks as the real VAE's: 8 px per latent, 16 px per transformer token."""
    torch.manual_seed(1)
    return AutoencoderKLFlux2(
        block_out_channels=(8, 8, 8, 8),
        layers_per_block=1,
        latent_channels=LATENT_CHANNELS,
        norm_num_groups=4,
        sample_size=64,
    ).eval()


def _tiny_transformer() -> Flux2Transformer2DModel:
    torch.manual_seed(2)
    return Flux2Transformer2DModel(
        in_channels=4 * LATENT_CHANNELS,  # 2x2 latent patches
        num_layers=1,
        num_single_layers=1,
        attention_head_dim=16,
        num_attention_heads=2,
        joint_attention_dim=OUT_LAYERS * TEXT_DIM,
        timestep_guidance_channels=16,
        axes_dims_rope=(4, 4, 4, 4),
    ).eval()


def build_tiny(family: Flux2, generation: dict):
    """A randomly initialised `Flux2Pipeline`, the same weights every time."""
    tokenizer = _tiny_tokenizer()
    pipe = family.pipeline_class()(
        scheduler=FlowMatchEulerDiscreteScheduler(use_dynamic_shifting=True),
        vae=_tiny_vae(),
        text_encoder=_tiny_text_encoder(tokenizer),
        tokenizer=PromptProcessor(tokenizer, chat_template=CHAT_TEMPLATE),
        transformer=_tiny_transformer(),
    )
    return recorded_as_checkpoint(pipe)
