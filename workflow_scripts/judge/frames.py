"""Frames and images for the judge, decoded and JPEG-encoded in memory.

A video is opened once and the sampled frames are read in one batched `get_batch`
(the official judge runs one `ffmpeg -ss` process per frame). Images are shrunk with
LANCZOS so that their long side is `long_side` and never enlarged: upscaling adds
tokens, not information.
"""

from __future__ import annotations

import io
import math
from dataclasses import dataclass
from pathlib import Path

import decord
from PIL import Image


@dataclass(frozen=True)
class Frame:
    """One sampled frame: its global index in the video, time in seconds, JPEG bytes."""

    index: int
    time: float
    jpeg: bytes


def to_jpeg(image: Image.Image, long_side: int, quality: int = 88) -> bytes:
    """`image` shrunk to `long_side` on its long side (never enlarged), as JPEG bytes."""
    scale = long_side / max(image.size)
    if scale < 1:
        size = tuple(max(1, round(side * scale)) for side in image.size)
        image = image.resize(size, Image.LANCZOS)
    out = io.BytesIO()
    image.convert("RGB").save(out, format="JPEG", quality=quality)
    return out.getvalue()


def encode_image(path: str | Path, long_side: int = 768) -> bytes:
    """A reference or input image as JPEG bytes, long side at most `long_side`."""
    with Image.open(path) as image:
        return to_jpeg(image, long_side)


def video_duration(video: str | Path) -> float:
    """Seconds of `video`: frame count / frame rate (the end of the last frame)."""
    reader = decord.VideoReader(str(video))
    return len(reader) / reader.get_avg_fps()


def frame_indices(
    count: int, rate: float, fps: float, start: float = 0.0, end: float | None = None
) -> list[int]:
    """The frames sampled at `fps` from a clip of `count` frames at `rate` fps.

    The whole clip (no `end`), as the official sampler: t_k = k / fps for k < n,
    n = round(duration x fps) + 1, the last time set to duration - 1 / rate (the last
    frame is always in), duration = count / rate. An interval: times start,
    start + 1/fps, ... <= end (clipped to the clip). A time t maps to frame
    round(t x rate) (halves up), clipped to the clip; repeats are dropped.
    """
    duration = count / rate
    start = max(0.0, start)
    if end is None:
        times = [k / fps for k in range(round(duration * fps) + 1)]
        times[-1] = duration - 1 / rate
    else:
        end = min(end, duration)
        if end < start:
            raise ValueError(f"empty interval [{start}, {end}]")
        steps = math.floor((end - start) * fps + 1e-6)
        times = [start + k / fps for k in range(steps + 1)]
    return list(dict.fromkeys(min(count - 1, math.floor(t * rate + 0.5)) for t in times))


def sample_frames(
    video: str | Path,
    fps: float,
    start: float = 0.0,
    end: float | None = None,
    long_side: int = 512,
) -> list[Frame]:
    """The frames of `frame_indices` (None `end`: the whole clip); a frame's time is
    index / video fps."""
    reader = decord.VideoReader(str(video))
    rate, count = reader.get_avg_fps(), len(reader)
    try:
        indices = frame_indices(count, rate, fps, start, end)
    except ValueError as err:
        raise ValueError(f"{video}: {err}") from None
    batch = reader.get_batch(indices).asnumpy()
    return [
        Frame(index, index / rate, to_jpeg(Image.fromarray(pixels), long_side))
        for index, pixels in zip(indices, batch, strict=True)
    ]
