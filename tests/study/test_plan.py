"""The plan's calls per video against the judge protocol's own calls, on FakeVLM."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from tests.study.scripted import OnePerWindow
from tests.support.fake_vlm import FakeVLM
from tests.support.workflow import first_example
from vgi_models.video import write_video
from workflow_scripts.judge.client import VLMClient
from workflow_scripts.judge.protocol import judge_video
from workflow_scripts.judge.settings import Protocol
from workflow_scripts.study.plan import judge_calls


@pytest.fixture(scope="module")
def instance():
    return first_example("sorting")


@pytest.mark.parametrize(("frames", "fps"), [(48, 16), (81, 16), (49, 24)])
@pytest.mark.parametrize(
    "protocol",
    [{}, {"sampling": "even"}, {"batching": "all_at_once"}, {"frames": "nearest"}],
    ids=["default", "even", "all_at_once", "nearest"],
)
def test_calls_per_video_are_the_protocols(tmp_path, monkeypatch, instance, frames, fps, protocol):
    """A judge nominating one moment per round-1 call makes exactly the calls planned."""
    video = tmp_path / "video.mp4"
    pixels = np.random.default_rng(frames).integers(0, 256, (frames, 72, 128, 3), dtype=np.uint8)
    write_video(pixels, video, fps)
    monkeypatch.setenv("FAKE_VLM_KEY", "test-key")
    with FakeVLM(OnePerWindow(tier=2, violations=[0])) as fake:
        config = {"model": "fake", "base_url": fake.url, "api_key_env": "FAKE_VLM_KEY"}

        async def judged():
            async with VLMClient.from_config(config, tmp_path / "cache") as client:
                return await judge_video(client, instance, video, Protocol(**protocol))

        score = asyncio.run(judged())["score"]
    planned, _ = judge_calls(frames, fps, Protocol(**protocol))
    assert score["status"] == "ok" and score["calls"] == len(fake.requests)
    assert planned == len(fake.requests), (planned, len(fake.requests))
