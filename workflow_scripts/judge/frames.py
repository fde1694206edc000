"""Frames and images for the judge, decoded and JPEG-encoded in memory.

Two sampling rules (`judge.protocol.frames`). `official`, the benchmark's own sampler:
the judge asks for times (`sample_times`) and reads, for each, the frame at or after it
(the time written to the millisecond, as the official judge hands it to `ffmpeg -ss`);
a time past the last frame reads nothing and is skipped, which at 25/30 fps can leave
the clip's last frame out. `nearest`: the nearest frame to each time, the last sample
moved onto the last frame so that it is always shown.

A pass's frames are read in one batched `get_batch` (the official judge runs one `ffmpeg
-ss` process per frame), and a judgement decodes each frame once (`VideoFrames`). Images
are shrunk with LANCZOS so that their long side is `long_side` and never enlarged: upscaling adds
tokens, not information. Decoding and shrinking are most of a VLM job's CPU, so rule
`prepare_frames` does them ahead, off the submit host (`judge.prepared`); a VLM job reads
those JPEGs (the same bytes) and decodes only what was not prepared.
"""

from __future__ import annotations

import io
import math
import threading
from dataclasses import dataclass
from pathlib import Path

import decord
from PIL import Image

from vgi_models.input_image import load_rgb


@dataclass(frozen=True)
class Frame:
    """One sampled frame: its global index in the video, time in seconds, JPEG bytes."""

    index: int
    time: float
    jpeg: bytes
    asked: float | None = None  # the sample time it was read for (the official rule)


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
    return to_jpeg(load_rgb(path), long_side)


def video_duration(video: str | Path) -> float:
    """Seconds of `video`: frame count / frame rate (the end of the last frame)."""
    reader = decord.VideoReader(str(video))
    return len(reader) / reader.get_avg_fps()


def sample_times(
    count: int, rate: float, fps: float, start: float = 0.0, end: float | None = None
) -> list[float]:
    """The times the official sampler asks for in a clip of `count` frames at `rate` fps.

    The whole clip (no `end`): t_k = k / fps for k <= round(duration x fps), each at most
    duration - 1 / rate (repeats dropped), duration = count / rate. An interval: its ends
    clipped to [0, duration - 1 / rate], then start, start + 1/fps, ... short of the end,
    and the end itself (none if the clipped interval is empty).
    """
    duration = count / rate
    latest = max(0.0, duration - 1 / rate)
    if end is None:
        times = [min(latest, k / fps) for k in range(round(duration * fps) + 1)]
    else:
        start, end = (max(0.0, min(t, latest)) for t in (start, end))
        if end <= start:
            return []
        steps = math.ceil((end - start) * fps - 1e-6)
        times = [*(start + k / fps for k in range(steps) if start + k / fps < end - 1e-6), end]
    return list(dict.fromkeys(round(t, 6) for t in times))


def frame_at(time: float, count: int, rate: float) -> int | None:
    """The frame at or after `time` written to the millisecond (what `ffmpeg -ss` reads);
    None past the last frame."""
    index = math.ceil(float(f"{max(0.0, time):.3f}") * rate - 1e-6)
    return index if index < count else None


def official_samples(
    count: int, rate: float, fps: float, start: float = 0.0, end: float | None = None
) -> list[tuple[int, float]]:
    """(frame, time asked) of the official sampler; a frame read twice is shown once."""
    read = {}
    for t in sample_times(count, rate, fps, start, end):
        index = frame_at(t, count, rate)
        if index is not None:
            read.setdefault(index, t)
    return list(read.items())


def frame_indices(
    count: int, rate: float, fps: float, start: float = 0.0, end: float | None = None
) -> list[int]:
    """The frames sampled at `fps` from a clip of `count` frames at `rate` fps, by the
    `nearest` rule.

    The whole clip (no `end`): t_k = k / fps for k < n, n = round(duration x fps) + 1,
    the last time set to duration - 1 / rate (the last frame is always in), duration =
    count / rate. An interval: times start, start + 1/fps, ... <= end (clipped to the
    clip). A time t maps to frame round(t x rate) (halves up), clipped to the clip;
    repeats are dropped.
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


def samples(
    count: int, rate: float, fps: float, start: float = 0.0, end=None, rule: str = "nearest"
) -> list[tuple[int, float | None]]:
    """(frame, time asked) of one pass over a clip of `count` frames at `rate` fps under
    `rule` (`official_samples`, or `frame_indices` with no time asked; None `end`: the
    whole clip)."""
    if rule == "official":
        return official_samples(count, rate, fps, start, end)
    return [(index, None) for index in frame_indices(count, rate, fps, start, end)]


def store_path(store: str | Path, index: int) -> Path:
    """Frame `index`'s JPEG in a folder of prepared frames (rule `prepare_frames`)."""
    return Path(store) / f"{index:05d}.jpg"


class VideoFrames:
    """One video's frames as the judge shows them (JPEG, `long_side`): each is decoded and
    encoded once, however many passes sample it (round 1 at 4 fps holds completeness's
    2 fps frames, round 2 at 8 fps half of its own). A frame found in `store` (prepared
    ahead by rule `prepare_frames`, at this `long_side`) is read, not decoded. Safe to
    sample from several threads."""

    def __init__(self, video: str | Path, long_side: int = 512, store: str | Path | None = None):
        self.video, self.long_side, self.store = Path(video), long_side, store
        self._jpeg: dict[int, bytes] = {}
        self._clip: tuple[int, float] | None = None
        self._lock = threading.Lock()

    def clip(self) -> tuple[int, float]:
        """The frame count and frame rate of the video."""
        with self._lock:
            return self._open()[0]

    def jpegs(self, indices) -> dict[int, bytes]:
        """The JPEG of each frame of `indices`: from memory, the store, or decoded."""
        with self._lock:
            return self._jpegs(indices)

    def sample(
        self, fps: float, start: float = 0.0, end: float | None = None, rule: str = "nearest"
    ) -> list[Frame]:
        """The frames `rule` samples (`samples`; None `end`: the whole clip); a frame's
        time is index / video fps, `asked` the time sampled."""
        with self._lock:
            (count, rate), reader = self._open()
            try:
                sampled = samples(count, rate, fps, start, end, rule)
            except ValueError as err:
                raise ValueError(f"{self.video}: {err}") from None
            jpeg = self._jpegs([index for index, _ in sampled], reader)
        return [Frame(index, index / rate, jpeg[index], asked) for index, asked in sampled]

    def uniform(self, shown: int) -> list[Frame]:
        """`shown` frames spread evenly from the first to the last (fewer if the clip is
        shorter), by the `nearest` rule."""
        count, rate = self.clip()
        return self.sample((shown - 1) / (count / rate))

    def _open(self) -> tuple[tuple[int, float], decord.VideoReader | None]:
        """The clip's (count, rate), and a reader where it took one to learn them."""
        if self._clip is not None:
            return self._clip, None
        reader = decord.VideoReader(str(self.video))
        self._clip = len(reader), reader.get_avg_fps()
        return self._clip, reader

    def _jpegs(self, indices, reader=None) -> dict[int, bytes]:
        missing = sorted(set(indices) - self._jpeg.keys())
        if self.store is not None:
            for index in missing:
                if (path := store_path(self.store, index)).is_file():
                    self._jpeg[index] = path.read_bytes()
            missing = [index for index in missing if index not in self._jpeg]
        if missing:
            reader = reader or decord.VideoReader(str(self.video))
            for index, pixels in zip(missing, reader.get_batch(missing).asnumpy(), strict=True):
                self._jpeg[index] = to_jpeg(Image.fromarray(pixels), self.long_side)
        return {index: self._jpeg[index] for index in indices}


def sample_frames(
    video: str | Path,
    fps: float,
    start: float = 0.0,
    end: float | None = None,
    long_side: int = 512,
    rule: str = "nearest",
) -> list[Frame]:
    """`VideoFrames(video, long_side).sample(fps, start, end, rule)`: one pass's frames."""
    return VideoFrames(video, long_side).sample(fps, start, end, rule)
