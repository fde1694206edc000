"""Pieces the family modules share."""

from __future__ import annotations

import numpy as np
import torch

# What the denoising loop steps, by the names of its step callback and `prepare_<name>`.
LOOP_TENSORS = ("latents",)


def final_latents(pipe, output) -> torch.Tensor:
    """The latent of an `output_type="latent"` call, as the family's `decode` takes it."""
    return output.frames


def checkpoint_latents(pipe, state: torch.Tensor, final: torch.Tensor) -> torch.Tensor:
    """A recorded state that is already a full latent in the `decode` form."""
    return state


def refine(pipe, output, generation: dict, **call):
    """What follows the recorded denoising: nothing for a one-stage family."""
    return output


def to_frames(pipe, video: torch.Tensor) -> np.ndarray:
    """A decoded video tensor -> uint8 frames [F, H, W, 3], via the pipeline's postprocessing."""
    frames = pipe.video_processor.postprocess_video(video, output_type="np")[0]
    return (frames * 255).astype(np.uint8)
