"""Writing generated frames as H.264 MP4 files."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from vgi_models.state import atomic_path


def write_video(frames: np.ndarray, path: Path | str, fps: int, audio=None) -> None:
    """uint8 frames [F, H, W, 3] -> a yuv420p H.264 MP4 any player opens.

    `audio`, a (waveform [channels, samples], sampling rate) pair, is muxed in as AAC by
    diffusers' PyAV encoder; silent videos go through imageio's ffmpeg at high quality. The
    encoder writes a temporary file that is renamed to `path` when complete (`atomic_path`).
    """
    with atomic_path(path, keep_suffix=True) as temporary:
        _encode(frames, temporary, fps, audio)


def _encode(frames: np.ndarray, path: Path, fps: int, audio) -> None:
    if audio is not None:
        import torch
        from diffusers.utils.export_utils import encode_video

        waveform, rate = audio
        encode_video(torch.from_numpy(frames), fps, str(path), waveform, rate)
        return
    import imageio.v2 as imageio  # only writers need it: the judge env imports checkpoint_name

    # libx264 named (imageio-ffmpeg's own binary has it): the same bytes on every machine,
    # and no probe of ffmpeg's encoders in each job
    writer = imageio.get_writer(
        path, format="FFMPEG", codec="libx264", fps=fps, quality=8, macro_block_size=16
    )
    try:
        for frame in frames:
            writer.append_data(frame)
    finally:  # on an error too (imageio's `with` closes only on success): no ffmpeg left writing
        writer.close()


def checkpoint_name(step: int, kind: str) -> str:
    """`step04.mp4` for x0, `step04_xt.mp4` for the noisy latent."""
    return f"step{step:02d}.mp4" if kind == "x0" else f"step{step:02d}_xt.mp4"
