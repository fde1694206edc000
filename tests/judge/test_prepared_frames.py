"""Frames prepared ahead (rule prepare_frames): every frame the judge can ask of a video is
prepared, the judge and the labels read them instead of decoding, and they are the bytes
the VLM jobs would make themselves, so no cached call changes."""

from __future__ import annotations

import asyncio
import io
import itertools
import json
import random
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from PIL import Image

from tests.support.fake_vlm import FakeVLM
from tests.support.scripted_judge import Judge
from tests.support.workflow import first_example
from vgi_models.video import checkpoint_name, write_video
from workflow_scripts.common.layout import frame_store
from workflow_scripts.judge.client import VLMClient
from workflow_scripts.judge.frames import VideoFrames, samples, store_path
from workflow_scripts.judge.prepared import prepare_frames_job
from workflow_scripts.judge.protocol import judge_video, reachable_frames, round2_spans
from workflow_scripts.judge.settings import Protocol, frame_params

CLIPS = [(16, 81), (24, 121), (25, 121), (30, 90)]  # (fps, frames): Wan, LTX, others


@pytest.mark.parametrize(("rate", "count"), CLIPS)
@pytest.mark.parametrize("rule", ["official", "nearest"])
@pytest.mark.parametrize("settings", [{}, {"round1_fps": 3, "round2_fps": 10, "radius": 0.3}])
def test_reachable_frames_hold_every_frame_the_judge_can_ask(rate, count, rule, settings):
    p = Protocol(frames=rule, **settings)
    first = samples(count, rate, p.round1_fps, rule=rule)
    asked = {i for i, _ in [*samples(count, rate, p.completeness_fps, rule=rule), *first]}
    times = [t if rule == "official" else i / rate for i, t in first]
    draws = random.Random(0)
    nominations = [[t] for t in times] + list(map(list, itertools.combinations(times, 2)))
    nominations += [draws.sample(times, draws.randint(3, len(times))) for _ in range(200)]
    for nominated in nominations:
        for start, stop in round2_spans(nominated, count, rate, p):
            asked |= {i for i, _ in samples(count, rate, p.round2_fps, start, stop, rule)}
    assert asked <= set(reachable_frames(count, rate, p))


def test_reachable_frames_of_a_16_fps_clip_are_its_8_fps_frames():
    assert reachable_frames(81, 16, Protocol()) == list(range(0, 81, 2))  # not all 81
    even = Protocol(sampling="even", even_fps=4)
    assert reachable_frames(81, 16, even) == list(range(0, 81, 4))  # no round 2


@pytest.fixture
def run_folder(tmp_path) -> Path:
    """An instance's generation: a 3 s video at 16 fps and two 9-frame checkpoints."""
    folder = tmp_path / "results" / "m" / "sorting" / "sorting_lv1_001"
    rng = np.random.default_rng(0)
    write_video(rng.integers(0, 256, (48, 144, 256, 3), dtype=np.uint8), folder / "video.mp4", 16)
    for step in (1, 2):
        pixels = rng.integers(0, 256, (9, 144, 256, 3), dtype=np.uint8)
        write_video(pixels, folder / "denoise" / checkpoint_name(step, "x0"), 16)
    return folder


def prepare(run_folder: Path, frames: Path) -> None:
    """Rule prepare_frames' job for the run folder, labels of steps 1 and 2."""
    smk = SimpleNamespace(
        input=SimpleNamespace(videos=[str(run_folder / "video.mp4")]),
        output=[str(frames)],
        params=SimpleNamespace(
            protocol=frame_params({"protocol": {"frame_long_side": 128}}),
            labels=json.dumps({"steps": [1, 2], "frames": 4}),
        ),
        log=[str(frames.parent / "prepare.log")],
    )
    prepare_frames_job(smk)


def test_prepared_frames_are_the_frames_the_jobs_make(run_folder, tmp_path):
    frames = tmp_path / "frames"
    prepare(run_folder, frames)
    video = run_folder / "video.mp4"
    store = frame_store(frames, video)
    prepared = sorted(int(path.stem) for path in store.glob("*.jpg"))
    assert prepared == reachable_frames(*VideoFrames(video).clip(), Protocol())
    made = VideoFrames(video, 128).jpegs(prepared)
    assert all(store_path(store, i).read_bytes() == made[i] for i in prepared)
    for step in (1, 2):
        checkpoint = run_folder / "denoise" / checkpoint_name(step, "x0")
        shown = VideoFrames(checkpoint, 128).uniform(4)
        read = VideoFrames(checkpoint, 128, frame_store(frames, checkpoint)).uniform(4)
        assert [f.jpeg for f in read] == [f.jpeg for f in shown] and len(shown) == 4
        assert all(store_path(frame_store(frames, checkpoint), f.index).is_file() for f in shown)


def marker() -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (128, 72), (255, 0, 255)).save(out, format="JPEG")
    return out.getvalue()


def test_the_judge_reads_prepared_frames_and_its_cached_calls_still_hit(
    run_folder, tmp_path, monkeypatch
):
    monkeypatch.setenv("FAKE_VLM_KEY", "test-key")
    instance = first_example("sorting")
    protocol = Protocol(frame_long_side=128)
    video = run_folder / "video.mp4"

    def judged(store, cache):
        with FakeVLM(Judge(tier=2, violations=[0], nominate=[8, 20])) as fake:
            config = {"model": "fake", "base_url": fake.url, "api_key_env": "FAKE_VLM_KEY"}

            async def judge():
                async with VLMClient.from_config(config, tmp_path / cache) as client:
                    return await judge_video(client, instance, video, protocol, None, store)

            documents = asyncio.run(judge())
            assert documents["score"]["calls"] == len(fake.requests)
            return documents, [image for r in fake.requests for image in r.images]

    decoded, sent = judged(None, "cache")
    assert decoded["score"]["calls"] == 6 and decoded["score"]["status"] == "ok"
    frames = tmp_path / "frames"
    prepare(run_folder, frames)
    store = frame_store(frames, video)
    read, resent = judged(store, "cache")
    assert resent == [] and read["score"]["cached_calls"] == 6  # the same bytes: all hits
    assert read["score"]["final"] == decoded["score"]["final"]
    frame_20 = store_path(store, 20).read_bytes()
    store_path(store, 20).write_bytes(marker())  # round 1 and round 2 show frame 20
    _, sent_again = judged(store, "fresh_cache")
    assert sent.count(frame_20) == sent_again.count(marker()) == 2
    assert sorted(sent_again) == sorted(marker() if image == frame_20 else image for image in sent)
