"""The judge protocol end to end: the real google-genai client against FakeVLM.

The test video is 3 s at 16 fps (48 frames), so the sampled frame indices are known:
2 fps -> 0, 8, ..., 40, 47 (7 frames; the last sample, t = 3 s, maps to the last frame);
4 fps -> 0, 4, ..., 44, 47 (13 frames: windows 0..36 and 36, 40, 44, 47).
"""

from __future__ import annotations

import asyncio
import json

import numpy as np
import pytest

from tests.fake_vlm import FakeVLM, Received
from tests.scripted_judge import Judge, frames_of, kind
from tests.workflow import REPO
from vgi_models.video import write_video
from workflow_scripts.benchmark import load_instances
from workflow_scripts.judge.client import VLMClient
from workflow_scripts.judge.frames import encode_image
from workflow_scripts.judge.protocol import intervals, judge_video, scores, windows
from workflow_scripts.judge.settings import judge_params

FPS = 16
ROUND1 = [*range(0, 37, 4)], [36, 40, 44, 47]


@pytest.fixture(scope="module")
def video(tmp_path_factory):
    path = tmp_path_factory.mktemp("video") / "video.mp4"
    pixels = np.random.default_rng(0).integers(0, 256, (3 * FPS, 144, 256, 3), dtype=np.uint8)
    write_video(pixels, path, FPS)
    return path


@pytest.fixture(scope="module")
def rows():
    table = load_instances(
        REPO / "tasks" / "examples",
        REPO / "tasks" / "task_names.yaml",
        REPO / "tasks" / "overlap.yaml",
        tasks=["sorting", "clock_running"],
        levels=[1],
    )
    return {task: table[table["task"] == task].iloc[0].to_dict() for task in table["task"]}


@pytest.fixture
def run(tmp_path, monkeypatch):
    """run(judge, instance, video) -> (documents, requests), all calls cached in tmp_path."""
    monkeypatch.setenv("FAKE_VLM_KEY", "test-key")

    def run(judge: Judge, instance: dict, video, attempts: int = 2):
        with FakeVLM(judge) as fake:
            config = {
                "backend": "gemini",
                "model": "fake-model",
                "base_url": fake.url,
                "api_key_env": "FAKE_VLM_KEY",
                "max_attempts": attempts,
                "backoff_initial_s": 0.01,
                "backoff_max_s": 0.01,
            }

            async def judged():
                async with VLMClient.from_config(config, tmp_path / "cache") as client:
                    return await judge_video(client, instance, video)

            return asyncio.run(judged()), fake.requests

    return run


def by_kind(requests: list[Received]) -> dict[str, list[Received]]:
    calls: dict[str, list[Received]] = {}
    for received in sorted(requests, key=lambda r: frames_of(r)[:1]):
        calls.setdefault(kind(received), []).append(received)
    return calls


@pytest.mark.parametrize(
    ("tier", "violations", "rubric", "final", "strict"),
    [
        (1, [0, 1, 3], (1 + 1 / 2 + 1 / 4) / 3, 0.5 * 0.58333333, False),
        (1, [0, 1, 3, 0], 2.75 / 4, 0.34375, False),
        (2, [0, 0, 1, 0], 0.875, 0.875, False),
        (2, [0, 0, 0, 0], 1.0, 1.0, True),
        (0, [0, 0, 0, 0], 1.0, 0.0, False),
    ],
)
def test_scores(tier, violations, rubric, final, strict):
    score = scores(tier, violations)
    assert score["completeness"] == tier / 2
    assert score["rubric"] == pytest.approx(rubric)
    assert score["final"] == pytest.approx(final)
    assert score["strict_success"] is strict


def test_windows_share_one_frame_and_keep_two():
    sizes = {n: [len(w) for w in windows(list(range(n)), 10, 1)] for n in (1, 2, 10, 11, 13, 19)}
    assert sizes == {1: [1], 2: [2], 10: [10], 11: [10, 2], 13: [10, 4], 19: [10, 10]}
    assert [w[0] for w in windows(list(range(30)), 10, 1)] == [0, 9, 18, 27]


def test_intervals_clip_and_merge():
    assert intervals([2.75, 1.25, 1.5], 0.5, 3.0) == [(0.75, 2.0), (2.25, 3.0)]
    assert intervals([0.2, 2.0], 0.5, 3.0) == [(0.0, 0.7), (1.5, 2.5)]
    assert intervals([], 0.5, 3.0) == []


def test_params_leave_out_key_endpoint_and_pacing():
    config = {"backend": "gemini", "model": "m", "base_url": "http://x", "api_key_env": "K"}
    params = json.loads(judge_params({**config, "max_concurrency": 3, "protocol": {"window": 6}}))
    assert set(params) == {"backend", "model", "protocol"}
    assert params["protocol"]["window"] == 6 and params["protocol"]["round2_fps"] == 8.0


def test_frames_windows_and_scores(run, rows, video):
    """Reference image case: nominations drive round 2; a second run is served from the cache."""
    row = rows["sorting"]
    judge = Judge(tier=1, violations=[0, 1, 3, 0], nominate=[20, 44, 47, 999])
    documents, requests = run(judge, row, video)
    calls = by_kind(requests)
    assert {k: len(v) for k, v in calls.items()} == {
        "completeness": 1,
        "window1": 2,
        "window2": 2,
        "polish": 1,
    }

    # Every frame call: input image first, then the reference image, then the frames.
    input_image, reference = encode_image(row["image"]), encode_image(row["gt_image"])
    for received in requests:
        if kind(received) != "polish":
            assert received.images[:2] == [input_image, reference]
            assert len(received.images) == 2 + len(frames_of(received))
            assert not any(t.startswith("Reference solution:") for t in received.texts)
    completeness = calls["completeness"][0]
    assert [i for i, _ in frames_of(completeness)] == [0, 8, 16, 24, 32, 40, 47]
    assert row["tier_standard"] in completeness.texts[-1]
    assert [[i for i, _ in frames_of(r)] for r in calls["window1"]] == list(ROUND1)

    # Round 2: 20 (t=1.25) and 44, 47 (t=2.75, 2.94; 20 is not shown there, 999 nowhere).
    spans = [(0.75, 1.75), (2.25, 3.0)]
    second = [frames_of(r) for r in calls["window2"]]
    assert [len(frames) for frames in second] == [9, 7]
    for (start, stop), frames in zip(spans, second, strict=True):
        indices = [index for index, _ in frames]
        assert all(start - 1 / 32 <= index / FPS <= stop + 1 / 32 for index in indices)
        assert set(np.diff(indices[:-1])) == {FPS // 8}

    polish = calls["polish"][0]
    assert polish.images == [] and len(polish.texts) == 1
    text = polish.texts[0]
    assert "## Round 1" in text and "## Round 2" in text and "frames 36-47, t=2.25-2.94 s" in text
    assert all(f"{n}. {item}" in text for n, item in enumerate(row["checklist"], 1))

    score, rubric = documents["score"], documents["rubric"]
    assert score["status"] == "ok" and score["violations"] == [0, 1, 3, 0]
    assert (score["tier"], score["completeness"]) == (1, 0.5)
    assert score["rubric"] == pytest.approx(0.6875) and score["final"] == pytest.approx(0.34375)
    assert score["strict_success"] is False
    assert (score["calls"], score["cached_calls"]) == (6, 0) and score["tokens"]["total"] > 0
    assert rubric["round2_intervals"] == [list(span) for span in spans]
    assert [w["nominated"] for w in rubric["windows"] if w["round"] == 1] == [[20], [44, 47]]
    assert documents["completeness"]["frames"] == [0, 8, 16, 24, 32, 40, 47]

    again, requests = run(judge, row, video)
    assert requests == []
    assert (again["score"]["calls"], again["score"]["cached_calls"]) == (0, 6)
    assert again["score"]["tokens"] == score["tokens"]
    assert again["rubric"] == rubric and again["completeness"] == documents["completeness"]


def test_reference_text_and_strict_success(run, rows, video):
    row = rows["clock_running"]
    documents, requests = run(Judge(tier=2, violations=[0, 0, 0, 0]), row, video)
    calls = by_kind(requests)
    assert "window2" not in calls and documents["rubric"]["round2_intervals"] == []
    completeness = calls["completeness"][0]
    assert len(completeness.images) == 1 + 7
    assert f"Reference solution: {row['gt_text']}" in completeness.texts
    score = documents["score"]
    assert (score["final"], score["strict_success"], score["calls"]) == (1.0, True, 4)


def test_polish_retried_until_it_fits(run, rows, video):
    """One entry short, then index 1 four times, then a verdict that fits."""
    judge = Judge(tier=2, violations=[0, 0, 1, 0], bad_polish=["short", "repeated"])
    documents, requests = run(judge, rows["sorting"], video, attempts=3)
    assert len(by_kind(requests)["polish"]) == 3
    assert documents["score"]["status"] == "ok"
    assert documents["score"]["final"] == pytest.approx(0.875)


def test_polish_always_short_is_an_error(run, rows, video):
    judge = Judge(tier=2, violations=[0, 0, 0, 0], bad_polish=["short", "short"])
    documents, requests = run(judge, rows["sorting"], video)
    assert len(by_kind(requests)["polish"]) == 2
    score = documents["score"]
    assert score["status"] == "error" and score["reason"].startswith("rubric verdict: ")
    assert score["final"] is None and score["rubric"] is None and score["calls"] == 4
    assert documents["completeness"]["status"] == "ok" and documents["completeness"]["tier"] == 2
    assert documents["rubric"]["status"] == "error" and len(documents["rubric"]["windows"]) == 2


def test_failed_window_is_an_error_not_a_zero(run, rows, video):
    judge = Judge(tier=2, violations=[0, 0, 0, 0], nominate=[4], bad_windows=[36])
    documents, requests = run(judge, rows["sorting"], video)
    calls = by_kind(requests)
    assert len(calls["window1"]) == 1 + 2 and "window2" not in calls and "polish" not in calls
    score = documents["score"]
    assert score["status"] == "error" and score["final"] is None
    assert score["reason"].startswith("rubric round 1 window 2: ")
    assert "uncovered" in score["reason"]
    first, failed = documents["rubric"]["windows"]
    assert first["nominated"] == [4] and "uncovered" in failed["error"]
    assert documents["completeness"]["status"] == "ok"
