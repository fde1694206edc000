"""HunyuanVideo-1.5 attention without the dense S x S mask.

diffusers' `HunyuanVideo15AttnProcessor2_0` expands the text padding mask into a [B, 1, S, S]
boolean mask (S = video + text tokens, about 113,600 at 720p and 121 frames: 12.9 GB per copy,
and SDPA adds a float copy). The transformer orders the text tokens valid first, padding last,
and appends them after the video tokens, so a sample's valid tokens are a prefix of its
sequence: a padded token is never attended to, and a padded query row attends to nothing.
`PrefixAttnProcessor` attends over that prefix without any mask and gives the padded rows
zeros, as SDPA does for fully masked rows; memory is O(S) beyond the attention kernel's own.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from diffusers.models.attention_dispatch import dispatch_attention_fn
from diffusers.models.embeddings import apply_rotary_emb


def _project(attn, states: torch.Tensor, q, k, v, norm_q, norm_k):
    """Query, key and value [B, L, heads, dim] of `states`, normalised."""
    query, key, value = (p(states).unflatten(2, (attn.heads, -1)) for p in (q, k, v))
    return (norm_q(query) if norm_q else query), (norm_k(key) if norm_k else key), value


def _valid_lengths(batch: int, seq_len: int, mask: torch.Tensor | None) -> list[int]:
    """Per sample, the length of the valid prefix (the text mask [B, L] ends the sequence)."""
    if mask is None:
        return [seq_len] * batch
    mask = mask.bool()
    pads = (~mask).sum(dim=1).tolist()
    if not all(bool(row[: mask.shape[1] - pad].all()) for row, pad in zip(mask, pads, strict=True)):
        raise ValueError("text padding is not at the end of the sequence: cannot drop it")
    return [seq_len - pad for pad in pads]


class PrefixAttnProcessor:
    """Drop-in for `HunyuanVideo15AttnProcessor2_0`: same projections, no S x S mask."""

    _attention_backend = None
    _parallel_config = None

    def __call__(
        self,
        attn,
        hidden_states: torch.Tensor,
        encoder_hidden_states: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        image_rotary_emb: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        query, key, value = _project(
            attn, hidden_states, attn.to_q, attn.to_k, attn.to_v, attn.norm_q, attn.norm_k
        )
        if image_rotary_emb is not None:
            query = apply_rotary_emb(query, image_rotary_emb, sequence_dim=1)
            key = apply_rotary_emb(key, image_rotary_emb, sequence_dim=1)
        text = encoder_hidden_states is not None
        if text:
            projected = _project(
                attn,
                encoder_hidden_states,
                attn.add_q_proj,
                attn.add_k_proj,
                attn.add_v_proj,
                attn.norm_added_q,
                attn.norm_added_k,
            )
            query, key, value = (
                torch.cat(p, dim=1) for p in zip((query, key, value), projected, strict=True)
            )

        out = torch.cat(
            [
                self._attend(query[i : i + 1], key[i : i + 1], value[i : i + 1], valid)
                for i, valid in enumerate(_valid_lengths(*query.shape[:2], attention_mask))
            ]
        )
        out = out.flatten(2, 3).to(query.dtype)
        if not text:
            return out, None
        length = encoder_hidden_states.shape[1]
        out, encoder_out = out[:, :-length], out[:, -length:]
        out = attn.to_out[1](attn.to_out[0](out))
        return out, attn.to_add_out(encoder_out)

    def _attend(self, query, key, value, valid: int) -> torch.Tensor:
        out = dispatch_attention_fn(
            query[:, :valid],
            key[:, :valid],
            value[:, :valid],
            dropout_p=0.0,
            is_causal=False,
            backend=self._attention_backend,
            parallel_config=self._parallel_config,
        )
        return F.pad(out, (0, 0, 0, 0, 0, query.shape[1] - valid))


def use_prefix_attention(transformer) -> None:
    """Give every joint video-text attention of `transformer` the mask-free processor."""
    for block in transformer.transformer_blocks:
        block.attn.set_processor(PrefixAttnProcessor())
