"""The judge protocol end to end: the real google-genai client against FakeVLM.

The test video is 3 s at 16 fps (48 frames), so the sampled frame indices are known. By
the official sampler (the default) the last sample is asked at 3 - 1/16 = 2.9375 s,
written 2.938 s, past frame 47 (2.9375 s), so it reads nothing and is skipped:
2 fps -> 0, 8, ..., 40 (6 frames); 4 fps -> 0, 4, ..., 44 (12 frames: windows 0..36 and
36, 40, 44). By the `nearest` rule the last frame, 47, is shown too.
"""

from __future__ import annotations

import asyncio
import json
import math
import re

import numpy as np
import pytest

from tests.support.fake_vlm import FakeVLM, Received, version
from tests.support.scripted_judge import FRAME, Judge, frames_of, kind
from tests.support.workflow import example_instances
from vgi_models.video import write_video
from workflow_scripts.judge.client import VLMClient
from workflow_scripts.judge.frames import encode_image
from workflow_scripts.judge.protocol import intervals, judge_video, windows
from workflow_scripts.judge.replies import scores
from workflow_scripts.judge.settings import Protocol, judge_params
from workflow_scripts.judge.templates import HERE as TEMPLATES

FPS = 16
ROUND1 = [*range(0, 37, 4)], [36, 40, 44]


@pytest.fixture(scope="module")
def video(tmp_path_factory):
    path = tmp_path_factory.mktemp("video") / "video.mp4"
    pixels = np.random.default_rng(0).integers(0, 256, (3 * FPS, 144, 256, 3), dtype=np.uint8)
    write_video(pixels, path, FPS)
    return path


@pytest.fixture(scope="module")
def rows():
    table = example_instances(tasks=["sorting", "clock_running"], levels=[1])
    first = {task: table.index[table["task"] == task][0] for task in table["task"]}
    return {task: {**table.loc[name].to_dict(), "instance": name} for task, name in first.items()}


@pytest.fixture
def run(tmp_path, monkeypatch):
    """run(judge, instance, video) -> (documents, requests), all calls cached in tmp_path."""
    monkeypatch.setenv("FAKE_VLM_KEY", "test-key")

    def run(judge: Judge, instance: dict, video, attempts: int = 2, **protocol):
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
                    return await judge_video(client, instance, video, Protocol(**protocol))

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
    assert set(params) == {"backend", "model", "protocol", "prompts"}
    assert params["protocol"]["window"] == 6 and params["protocol"]["round2_fps"] == 8.0


@pytest.mark.parametrize(
    ("name", "reruns"),
    [
        ("window.txt", "judge"),
        ("completeness_system.txt", "judge"),
        ("verdict.txt", "judge"),
        ("transition.txt", "label_transitions"),
    ],
)
def test_a_replaced_template_changes_only_its_rules_params(tmp_path, name, reruns):
    default = {"backend": "gemini", "model": "m"}
    folder = tmp_path / "prompts"
    folder.mkdir()
    (folder / name).write_text((TEMPLATES / name).read_text() + "\nOne more line.\n")
    replaced = {**default, "prompts": str(folder)}
    params = {
        "judge": [judge_params(config) for config in (default, replaced)],
        "label_transitions": [
            judge_params(config, ["transition"]) for config in (default, replaced)
        ],
    }
    assert {rule for rule, (before, after) in params.items() if before != after} == {reruns}
    after = json.loads(params[reruns][1])["prompts"]
    assert after[name].endswith("One more line.\n")


@pytest.mark.parametrize(
    ("name", "text", "problem"),
    [
        ("window.txt", "$references $frames $colour", "unknown placeholder(s) colour"),
        ("completeness.txt", "$references only", "required placeholder(s) missing: ['frames']"),
        ("verdict.txt", "costs 5 $", "a '$' that starts no placeholder"),
    ],
)
def test_a_bad_template_is_refused_naming_the_file(tmp_path, name, text, problem):
    (tmp_path / name).write_text(text)
    with pytest.raises(ValueError, match=re.escape(f"judge.prompts: {tmp_path / name}: {problem}")):
        judge_params({"prompts": str(tmp_path)})


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
    assert [i for i, _ in frames_of(completeness)] == [0, 8, 16, 24, 32, 40]
    assert any(row["tier_standard"] in text for text in completeness.texts)
    assert [[i for i, _ in frames_of(r)] for r in calls["window1"]] == list(ROUND1)

    # Round 2: 20 (t=1.25) and 44 (t=2.75; 20 and 47 are not shown there, 999 nowhere),
    # the second interval clipped to the last sample time, 2.9375 s (which reads nothing).
    spans = [(0.75, 1.75), (2.25, 2.938)]
    second = [frames_of(r) for r in calls["window2"]]
    assert [len(frames) for frames in second] == [9, 6]
    for (start, stop), frames in zip(spans, second, strict=True):
        indices = [index for index, _ in frames]
        assert all(start - 1 / 32 <= index / FPS <= stop + 1 / 32 for index in indices)
        assert set(np.diff(indices[:-1])) == {FPS // 8}

    polish = calls["polish"][0]
    assert polish.images == [] and len(polish.texts) == 1
    text = polish.texts[0]
    assert "Round 1" in text and "Round 2" in text and "frames 36-44, t = 2.25-2.75 s" in text
    assert all(f"{n}. {item}" in text for n, item in enumerate(row["checklist"], 1))

    score, rubric = documents["score"], documents["rubric"]
    assert score["status"] == "ok" and score["violations"] == [0, 1, 3, 0]
    assert (score["tier"], score["completeness"]) == (1, 0.5)
    assert score["rubric"] == pytest.approx(0.6875) and score["final"] == pytest.approx(0.34375)
    assert score["strict_success"] is False
    assert (score["calls"], score["cached_calls"]) == (6, 0) and score["tokens"]["total"] > 0
    assert score["model_version"] == version("fake-model")
    # nominations not shown (44, 47, 999 in window 1; 20, 47, 999 in window 2) are dropped
    assert (score["dropped_citations"], score["uncovered_frames"], score["imputed_items"]) == (
        6,
        0,
        [],
    )
    assert rubric["round2_intervals"] == [list(span) for span in spans]
    assert [w["nominated"] for w in rubric["windows"] if w["round"] == 1] == [[20], [44]]
    assert documents["completeness"]["frames"] == [0, 8, 16, 24, 32, 40]

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
    assert len(completeness.images) == 1 + 6
    assert f"Reference solution: {row['gt_text']}" in completeness.texts
    score = documents["score"]
    assert (score["final"], score["strict_success"], score["calls"]) == (1.0, True, 4)


def test_window_requests_carry_the_window_rules(run, rows, video):
    row = rows["sorting"]
    _, requests = run(Judge(tier=2, violations=[0]), row, video)
    window = by_kind(requests)["window1"]
    system = window[0].system.lower()
    assert "substantive" in system  # violations that matter only ...
    assert all(noise in system for noise in ("jitter", "overlap", "compression", "flicker"))
    assert re.search(r"do not guess what happened between", system)  # no inference in gaps
    assert re.search(r"nominate both of the frames around that gap", system)
    assert re.search(r"flag a violation only at a frame where it is visible", system)
    for k, received in enumerate(window, 1):
        assert received.system == window[0].system
        text = "\n".join(received.texts)
        shown = frames_of(received)
        (a, ta), (b, tb) = shown[0], shown[-1]
        batch = f"window {k} of 2: frames {a}-{b}, t = {ta:.2f}-{tb:.2f} s"
        assert batch in text.lower()
        headed = re.search(r"## Task\n(.+)\n\n## Task goal\n(.+)\n\n## Checklist\n", text)
        assert headed and headed.groups() == (row["task"], row["goal"])
        assert all(f"\n{n}. {item}" in text for n, item in enumerate(row["checklist"], 1))
        cap = math.ceil(len(shown) / 2)
        assert f"at most {cap}" in text


def test_completeness_request_has_its_own_rules_and_no_goal(run, rows, video):
    row = rows["sorting"]
    _, requests = run(Judge(tier=2, violations=[0]), row, video)
    calls = by_kind(requests)
    [received] = calls["completeness"]
    text = "\n".join(received.texts)
    assert row["goal"] not in text + received.system
    for label, value in (("Task", "sorting"), ("Level", 1), ("Instance", row["instance"])):
        assert f"{label}: {value}\n" in text
    standard = next(i for i, t in enumerate(received.texts) if row["tier_standard"] in t)
    first_frame = next(i for i, t in enumerate(received.texts) if FRAME.fullmatch(t))
    assert standard < first_frame  # the standard comes before the frames
    systems = {k: v[0].system for k, v in calls.items()}
    assert len(set(systems.values())) == 3  # completeness, window, verdict: one system each
    assert "tier standard" in systems["completeness"]


def test_verdict_request_carries_tolerance_dedup_rules_and_every_window(run, rows, video):
    row, judge = rows["sorting"], Judge(tier=2, violations=[0])

    def silent_second_window(received):  # window 2 of round 1 has nothing to say
        reply = judge(received)
        if kind(received) == "window1" and frames_of(received)[0][0] == 36:
            reply["evaluations"] = []
        return reply

    _, requests = run(silent_second_window, row, video)
    [received] = by_kind(requests)["polish"]
    text, system = received.texts[0], received.system
    assert received.images == [] and "frame and time range" in text
    assert re.search(r"borderline.*cosmetic.*not a violation", text, re.S)  # tolerance
    rules = re.findall(r"^\d\. (.+)$", text.split("## How to count")[1], re.M)
    assert len(rules) == 3
    assert "persists" in rules[0] and "one violation" in rules[0]
    assert "adjacent windows" in rules[1] and "0.5 s" in rules[1] and "boundary" in rules[1]
    assert "both rounds" in rules[2] and "one violation" in rules[2]
    listing = text.split("## How to count")[0]
    assert "Window 1 of 2: frames 0-36, t = 0.00-2.25 s\n- frames " in listing
    assert listing.rstrip().endswith("Window 2 of 2: frames 36-44, t = 2.25-2.75 s\n(none)")
    assert "comments" in system and "do not see the video" in system


@pytest.mark.parametrize("task", ["sorting", "clock_running"])
def test_loose_replies_are_taken_as_they_come(run, rows, video, task):
    """Every window cites an unshown frame and leaves one uncovered: ok, and never re-asked."""
    judge = Judge(tier=1, violations=[0, 2], nominate=[20], loose=True)
    documents, requests = run(judge, rows[task], video)
    calls = by_kind(requests)
    windows_asked = [tuple(frames_of(r)) for k in ("window1", "window2") for r in calls[k]]
    assert len(windows_asked) == len(set(windows_asked)) == len(documents["rubric"]["windows"])
    assert len(calls["polish"]) == len(calls["completeness"]) == 1
    score, k = documents["score"], len(rows[task]["checklist"])
    violations = ([0, 2] * k)[:k]
    expected = scores(1, violations)
    assert score["status"] == "ok" and score["violations"] == violations
    assert score["final"] == pytest.approx(expected["final"]) and score["calls"] == len(requests)
    n = len(windows_asked)
    # one unshown citation per window, and round 1's window 2 nominating 20, not shown there
    assert (score["dropped_citations"], score["uncovered_frames"]) == (n + 1, n)
    for doc in documents["rubric"]["windows"]:
        assert doc["uncovered"] == doc["frames"][:1]
        assert doc["dropped_citations"][0] == doc["frames"][-1] + 1


def test_nominations_are_capped_at_half_the_window(run, rows, video):
    documents, requests = run(Judge(2, [0], nominate="all"), rows["sorting"], video)
    first = [w for w in documents["rubric"]["windows"] if w["round"] == 1]
    assert [w["nominated"] for w in first] == [[0, 4, 8, 12, 16], [36, 40]]
    assert [w["dropped_nominations"] for w in first] == [[20, 24, 28, 32, 36], [44]]
    assert documents["score"]["dropped_nominations"] == 6
    # round 2 follows the kept ones only: 0-1.5 s (0, 0.25, ... 1.0) and 1.75-2.9375 s
    # (2.25, 2.5; clipped to the last sample time)
    assert documents["rubric"]["round2_intervals"] == [[0.0, 1.5], [1.75, 2.938]]


@pytest.mark.parametrize(
    ("faults", "asked", "imputed"),
    [
        (["short"], 2, []),  # asked again, and the second verdict is whole
        (["short", "short"], 2, [4]),  # still short: item 4 counts 1
        (["repeated", "repeated"], 2, [2, 3, 4]),
    ],
)
def test_strict_verdict_asks_once_for_missing_items_then_imputes(
    run, rows, video, faults, asked, imputed
):
    judge = Judge(tier=2, violations=[0, 0, 0, 0], bad_polish=faults)
    documents, requests = run(judge, rows["sorting"], video, verdict="strict")
    polish = by_kind(requests)["polish"]
    assert len(polish) == asked
    assert (
        "left out checklist item(s) "
        + ", ".join(map(str, [4] if faults[0] == "short" else [2, 3, 4]))
        in polish[1].texts[-1]
    )
    score = documents["score"]
    assert score["status"] == "ok" and score["imputed_items"] == imputed
    assert score["violations"] == [1 if n in imputed else 0 for n in range(1, 5)]
    assert score["final"] == pytest.approx(scores(2, score["violations"])["final"])
    assert score["strict_success"] is not imputed
    assert documents["rubric"]["polish"]["imputed_items"] == imputed


def test_strict_verdict_out_of_bounds_is_retried_then_an_error_not_a_zero(run, rows, video):
    judge = Judge(tier=2, violations=[0, 0, 0, 0], bad_polish=["unparsable"] * 2)
    documents, requests = run(judge, rows["sorting"], video, verdict="strict")
    assert len(by_kind(requests)["polish"]) == 2
    score = documents["score"]
    assert score["status"] == "error" and score["reason"].startswith("rubric verdict: ")
    assert score["final"] is None and score["rubric"] is None
    assert score["calls"] == 1 + 2 + 2  # every attempt counts (rule 12)
    assert documents["completeness"]["status"] == "ok" and documents["completeness"]["tier"] == 2


def broken_second_window(judge):
    """`judge`, except that round 1's window 2 answers outside the schema every time."""

    def answer(received):
        reply = judge(received)
        if kind(received) == "window1" and frames_of(received)[0][0] == 36:
            reply = {"evaluations": "no list"}
        return reply

    return answer


def test_strict_failures_a_failed_window_is_an_error_not_a_zero(run, rows, video):
    judge = broken_second_window(Judge(tier=2, violations=[0, 0, 0, 0], nominate=[4]))
    documents, requests = run(judge, rows["sorting"], video, failures="strict")
    calls = by_kind(requests)
    assert len(calls["window1"]) == 1 + 2 and "window2" not in calls and "polish" not in calls
    score = documents["score"]
    assert score["status"] == "error" and score["final"] is None
    assert score["reason"].startswith("rubric round 1 window 2: ")
    first, failed = documents["rubric"]["windows"]
    assert first["nominated"] == [4] and "schema" in failed["error"]


def test_official_failures_a_video_whose_every_call_failed_is_an_error(run, rows, video):
    """The official rules score around a failed call; with none answered, nothing is left."""
    documents, requests = run(lambda received: "no JSON here", rows["sorting"], video)
    score = documents["score"]
    assert score["status"] == "error" and score["reason"].startswith("every call failed (")
    assert score["final"] is None and score["calls"] == len(requests) > 0
