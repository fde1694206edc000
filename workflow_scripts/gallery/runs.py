"""One (model, instance) of a run under the outdir, and the videos and judge documents the
gallery shows of it (DESIGN, "Outputs")."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from workflow_scripts.common import layout
from workflow_scripts.common.files import read_json

CHECKPOINT = re.compile(r"step(\d+)(_xt)?\.mp4")
JPEG = {"quality": 80, "optimize": True}  # the gallery's thumbnails: small, made once


@dataclass(frozen=True)
class Run:
    """One (model, instance) under the outdir: `<outdir>/<model>/<task>/<instance>/`."""

    outdir: Path
    model: str
    task: str
    instance: str

    @classmethod
    def of(cls, outdir: str | Path, output: str | Path) -> Run:
        """The run whose output (`video.mp4`, `image.png`) is `output`."""
        model, task, instance = Path(output).relative_to(outdir).parts[:3]
        return cls(Path(outdir), model, task, instance)

    @property
    def folder(self) -> Path:
        return layout.run_folder(self.outdir, self.model, self.task, self.instance)

    @property
    def sheet(self) -> Path:
        return self.outdir / "gallery" / self.model / "sheets" / f"{self.instance}.png"

    @property
    def thumbnail(self) -> Path:
        """The final video's last frame, small (JPEG)."""
        return self.outdir / "gallery" / self.model / "thumbs" / f"{self.instance}.jpg"

    @property
    def strip(self) -> Path:
        """The last frame of each x0 checkpoint in step order, then the final's (JPEG)."""
        return self.outdir / "gallery" / self.model / "thumbs" / f"{self.instance}.steps.jpg"

    def generation_error(self) -> str | None:
        """Why the generation failed (`generation.json` with `status: error`, e.g. a
        refused API request: no usable video), or None."""
        return layout.failed_generation(self.folder / "video.mp4")

    def videos(self) -> list[tuple[str, Path]]:
        """(label, path): checkpoints by step (x0 before x_t), then the final video."""
        return [*checkpoint_videos(self.folder / "denoise"), ("final", self.folder / "video.mp4")]

    def judged(self, name: str) -> dict | None:
        """The judge's document `name` (`score`, `rubric`, `completeness`), if written."""
        where = layout.judged(self.outdir, self.model, self.task, self.instance)
        return _read(where / f"{name}.json")

    def score(self) -> dict | None:
        return self.judged("score")

    def transitions(self) -> dict | None:
        """The checkpoint pairs' labels, if written."""
        return _read(layout.transitions_file(self.outdir, self.model, self.task, self.instance))


@dataclass(frozen=True)
class ImageRun(Run):
    """An image model's (model, instance): `<outdir>/<model>/<task>/<instance>/image.png`,
    judged under `judge_image/` (the image branch: no video, checkpoints or sheet)."""

    @property
    def image(self) -> Path:
        return self.folder / "image.png"

    def score(self) -> dict | None:
        folder = layout.stage_folder(self.outdir, self.model, self.task, "judge_image")
        return _read(folder / self.instance / "score.json")


def _read(path: Path) -> dict | None:
    return read_json(path, layout.stage_fix(path), optional=True)


def checkpoint_videos(folder: Path) -> list[tuple[str, Path]]:
    """(label, path) of the stepNN[_xt].mp4 videos in `folder`, in step order (none where
    there is no folder: videos made elsewhere)."""
    paths = folder.iterdir() if folder.is_dir() else []
    found = [(CHECKPOINT.fullmatch(path.name), path) for path in paths]
    keys = sorted((int(m[1]), bool(m[2]), path) for m, path in found if m)
    return [(f"step {step}" + (" x_t" if xt else ""), path) for step, xt, path in keys]


def runs_of(smk) -> list[Run]:
    """The runs whose `video.mp4` the job takes as `input.videos`."""
    return [Run.of(smk.config["outdir"], video) for video in smk.input.videos]


def image_runs_of(smk) -> list[ImageRun]:
    """The image runs whose `image.png` the job takes as `input.generated_images`."""
    return [ImageRun.of(smk.config["outdir"], image) for image in smk.input.generated_images]
