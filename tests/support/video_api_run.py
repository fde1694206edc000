"""A tiny study of the shipped video API models (the registry's entries that have a double
in tests/support/video_doubles/, pointed at FakeVideoAPI at their shortest clip) over 6
bundled instances, for workflow tests."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import yaml

from tests.support.fake_video_api import FakeVideoAPI, fingerprint
from tests.support.video_doubles import MODULES
from tests.support.workflow import REPO, default_config

KEY_ENV = "FAKE_VIDEO_KEY"
MODELS = tuple(MODULES)
TASKS = ["maze_square", "sorting"]  # 3 levels x 1 instance each: 6 instances


def api_entry(key: str, fake: FakeVideoAPI) -> dict:
    """The shipped registry entry `key`, on `fake`, at its shortest clip."""
    registry = yaml.safe_load((REPO / "config" / "models.yaml").read_text(encoding="utf-8"))
    entry = registry[key] | {"api_key_env": KEY_ENV, "base_url": fake.base_url(key)}
    return entry | {"generation": fake.doubles[key].short(entry["generation"])}


def api_config(workdir: Path, fake: FakeVideoAPI, **video_api) -> dict:
    """The run's config and a registry of the shipped API entries (`api_entry`)."""
    entries = {key: api_entry(key, fake) for key in MODELS}
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
