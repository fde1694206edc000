"""A tiny study of the two video API models (the registry's Veo 3.1 and Sora 2 entries,
pointed at FakeVideoAPI) over 6 bundled instances, for workflow tests."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import yaml

from tests.support.fake_video_api import FakeVideoAPI, fingerprint
from tests.support.workflow import REPO, default_config

KEY_ENV = "FAKE_VIDEO_KEY"
MODELS = ("veo31", "sora2")
TASKS = ["maze_square", "sorting"]  # 3 levels x 1 instance each: 6 instances


def api_config(workdir: Path, fake: FakeVideoAPI, **video_api) -> dict:
    """The run's config and a registry of the shipped API entries at 4 s, on `fake`."""
    registry = yaml.safe_load((REPO / "config" / "models.yaml").read_text(encoding="utf-8"))
    entries = {key: registry[key] | {"api_key_env": KEY_ENV} for key in MODELS}
    entries["veo31"] |= {"base_url": fake.url}
    entries["sora2"] |= {"base_url": f"{fake.url}/v1"}
    entries["veo31"]["generation"]["duration_seconds"] = 4
    entries["sora2"]["generation"]["seconds"] = "4"
    workdir.mkdir(parents=True, exist_ok=True)
    path = workdir / "models.yaml"
    path.write_text(yaml.safe_dump(entries), encoding="utf-8")
    config = default_config(workdir, tasks=TASKS)
    config |= {"model_registry": str(path), "models": list(MODELS)}
    config["judge"] = {"enabled": False}
    config["video_api"] = {"poll_s": 0.2} | video_api
    return config


def submissions_per_video(fake: FakeVideoAPI) -> Counter:
    """How many times each (provider, input image) was submitted."""
    return Counter((op.provider, fingerprint(op.image).tobytes()) for op in fake.submissions)
