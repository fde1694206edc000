"""Videos made in a test and registered as `source: videos` models (docs/models.md): the
judge and what follows it run on them with one `cp` job a video and no generate job."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import yaml

from tests.support.workflow import default_config
from vgi_models.video import write_video


def clip(n: int, grey: int = 30) -> np.ndarray:
    """9 frames of 32x64 (one judge window at 8 fps): a flat `grey` with a white bar n + 1
    eighths wide, so that clips of different n differ (the judge cache takes equal ones
    for one)."""
    frames = np.full((9, 32, 64, 3), grey, np.uint8)
    frames[:, :, : 8 * (n + 1)] = 200
    return frames


def write_videos(folder: Path, videos: dict[str, np.ndarray], prefix: str | None = None) -> Path:
    """Each instance's frames as `<folder>/<task>/[<prefix>_]<instance>.mp4` at 8 fps;
    returns `folder`."""
    for instance, frames in videos.items():
        name = f"{prefix}_{instance}.mp4" if prefix else f"{instance}.mp4"
        write_video(frames, folder / instance.rsplit("_lv", 1)[0] / name, fps=8)
    return folder


def register(registry: Path, folders: dict[str, Path]) -> Path:
    """A model registry at `registry`: each model a `source: videos` entry on its folder."""
    entries = {model: {"source": "videos", "videos": str(path)} for model, path in folders.items()}
    registry.write_text(yaml.safe_dump(entries), encoding="utf-8")
    return registry


def videos_config(workdir: Path, folders: dict[str, Path], **benchmark) -> dict:
    """default_config(workdir, **benchmark) running just the models of `folders`, registered
    in `workdir`/models.yaml."""
    config = default_config(workdir, **benchmark)
    config["models"] = list(folders)
    config["model_registry"] = str(register(workdir / "models.yaml", folders))
    return config
