"""Replays of the official judge's rules (issue 19), one test (or table) per rule.

Scripted replies, in shapes the official parser accepts, go through our client, parsing
and aggregation, and must give the x_i, rubric and final the official rules give (worked
out by hand in each case). Sample times are checked against times computed by hand from
the official sampler: t = k / f, the last at min(D - 1/fps, round(D f) / f), the frame at
or after each time written to the millisecond (a time past the last frame reads nothing),
round-2 intervals of +-0.5 s centred on the time asked.
"""

from __future__ import annotations

import json
import math
import shutil

import numpy as np
import pytest

from tests.judge.test_judge_protocol import by_kind, rows, run, video  # noqa: F401 (fixtures)
from tests.support.fake_vlm import _usage
from tests.support.scripted_judge import Judge, frames_of, kind
from tests.support.workflow import EXAMPLES, META
from vgi_models.video import write_video
from workflow_scripts.benchmark import rubric
from workflow_scripts.benchmark.instances import load_instances
from workflow_scripts.judge.client import loads_reply
from workflow_scripts.judge.frames import frame_indices, official_samples, sample_times
from workflow_scripts.judge.protocol import intervals
from workflow_scripts.judge.replies import scores, take_verdict
from workflow_scripts.judge.settings import Protocol, judge_params
from workflow_scripts.judge.templates import HERE as TEMPLATES

# Rule 1. Frames per pass of a 3 s clip (D = 3) at each rate: (official, nearest).
# Official: the last time is D - 1/rate: 2.9375 (written 2.938, past frame 47 at 16 fps),
# 2.958333 (2.958 -> frame 71), 2.96 (frame 74), 2.966667 (2.967, past frame 89 at 30).
THREE_SECONDS = {
    (16, 2): ([*range(0, 41, 8)], [*range(0, 41, 8), 47]),
    (16, 4): ([*range(0, 45, 4)], [*range(0, 45, 4), 47]),
    (16, 8): ([*range(0, 47, 2)], [*range(0, 47, 2), 47]),
    (24, 2): ([*range(0, 61, 12), 71], [*range(0, 61, 12), 71]),
    (24, 4): ([*range(0, 67, 6), 71], [*range(0, 67, 6), 71]),
    (24, 8): ([*range(0, 70, 3), 71], [*range(0, 70, 3), 71]),
    # 25 fps, 4 fps: t = 0.25 k is frame 6.25 k; at or after: 7, 32, 57 where nearest: 6, 31, 56
    (25, 2): ([0, 13, 25, 38, 50, 63, 74], [0, 13, 25, 38, 50, 63, 74]),
    (25, 4): (
        [0, 7, 13, 19, 25, 32, 38, 44, 50, 57, 63, 69, 74],
        [0, 6, 13, 19, 25, 31, 38, 44, 50, 56, 63, 69, 74],
    ),
    (25, 8): (
        [*(math.ceil(3.125 * k) for k in range(24)), 74],
        [*(math.floor(3.125 * k + 0.5) for k in range(24)), 74],
    ),
    (30, 2): ([0, 15, 30, 45, 60, 75], [0, 15, 30, 45, 60, 75, 89]),
    (30, 4): (
        [0, 8, 15, 23, 30, 38, 45, 53, 60, 68, 75, 83],
        [0, 8, 15, 23, 30, 38, 45, 53, 60, 68, 75, 83, 89],
    ),
    # 30 fps, 8 fps: frame 3.75 k; at or after 4, 8, 12, 15, ...; nearest 4, 8, 11, 15, ...
    (30, 8): (
        [math.ceil(3.75 * k) for k in range(24)],
        [*(math.floor(3.75 * k + 0.5) for k in range(24)), 89],
    ),
}


@pytest.mark.parametrize(("rate", "fps"), THREE_SECONDS)
def test_rule1_sample_frames_official_and_nearest(rate, fps):
    official, nearest = THREE_SECONDS[rate, fps]
    assert [index for index, _ in official_samples(3 * rate, rate, fps)] == official
    assert frame_indices(3 * rate, rate, fps) == nearest


@pytest.mark.parametrize(
    ("count", "rate", "fps", "frames", "last"),
    [
        (81, 16, 2, 11, 80),  # 5.0625 s (a Wan clip): the last time, 5.0 s, is frame 80
        (81, 16, 4, 21, 80),
        (121, 24, 2, 11, 120),
        (150, 30, 2, 10, 135),  # 5 s: 4.967 s is past frame 149, so 10 frames, not 11
        (150, 30, 4, 20, 143),
        (125, 25, 2, 11, 124),
    ],
)
def test_rule1_five_second_clips(count, rate, fps, frames, last):
    read = official_samples(count, rate, fps)
    assert (len(read), read[0][0], read[-1][0]) == (frames, 0, last)


def test_rule1_times_asked():
    assert sample_times(90, 30, 4)[-2:] == [2.75, round(3 - 1 / 30, 6)]
    assert sample_times(48, 16, 2) == [0.0, 0.5, 1.0, 1.5, 2.0, 2.5, 2.9375]
    # an interval: its ends clipped to [0, D - 1/rate], the grid short of the end, the end
    assert sample_times(48, 16, 8, 2.25, 3.25) == [2.25, 2.375, 2.5, 2.625, 2.75, 2.875, 2.9375]
    assert sample_times(48, 16, 8, 3.0, 3.5) == []


# Rule 2. Round-2 frames around a round-1 sample asked at t (+-0.5 s, clipped to
# [0, D - 1/rate]), at 8 fps, by the official rule.
ROUND2 = {
    (16, 0.25): [0, 2, 4, 6, 8, 10, 12],
    (24, 0.25): [0, 3, 6, 9, 12, 15, 18],
    (25, 0.25): [0, 4, 7, 10, 13, 16, 19],
    (30, 0.25): [0, 4, 8, 12, 15, 19, 23],
    (16, 2.75): [36, 38, 40, 42, 44, 46],  # 2.9375 s reads nothing
    (24, 2.75): [54, 57, 60, 63, 66, 69, 71],
    (25, 2.75): [57, 60, 63, 66, 69, 72, 74],
    (30, 2.75): [68, 72, 75, 79, 83, 87],  # 2.967 s reads nothing
}


@pytest.mark.parametrize(("rate", "t"), ROUND2)
def test_rule2_round2_intervals_centred_on_the_time_asked(rate, t):
    latest = 3 - 1 / rate
    [(start, stop)] = intervals([t], 0.5, latest)
    assert (start, stop) == (max(0.0, t - 0.5), min(t + 0.5, latest))
    frames = [index for index, _ in official_samples(3 * rate, rate, 8, start, stop)]
    assert frames == ROUND2[rate, t]


@pytest.fixture(scope="module")
def video30(tmp_path_factory):
    path = tmp_path_factory.mktemp("video30") / "video.mp4"
    pixels = np.random.default_rng(1).integers(0, 256, (90, 144, 256, 3), dtype=np.uint8)
    write_video(pixels, path, 30)
    return path


@pytest.mark.parametrize(
    ("frames", "completeness", "second"),
    [
        ("official", [0, 15, 30, 45, 60, 75], [0, 4, 8, 12, 15, 19, 23]),
        # centred on frame 8's own time, 0.267 s: 0.375 s is frame 11.25, nearest 11
        ("nearest", [0, 15, 30, 45, 60, 75, 89], [0, 4, 8, 11, 15, 19, 23]),
    ],
)
def test_rules1_2_at_30_fps_end_to_end(run, rows, video30, frames, completeness, second):  # noqa: F811
    documents, requests = run(Judge(2, [0], nominate=[8]), rows["sorting"], video30, frames=frames)
    calls = by_kind(requests)
    assert [i for i, _ in frames_of(calls["completeness"][0])] == completeness
    assert [i for i, _ in frames_of(calls["window1"][0])] == [0, 8, 15, 23, 30, 38, 45, 53, 60, 68]
    assert [[i for i, _ in frames_of(r)] for r in calls["window2"]] == [second]
    assert documents["score"]["status"] == "ok"


def sorting_run(run, rows, video, verdict, **protocol):  # noqa: F811
    """The sorting instance (K = 4, tier 1) with `verdict` as the first verdict reply."""
    judge = Judge(tier=1, violations=[0, 0, 0, 0], bad_polish=[verdict])
    return run(judge, rows["sorting"], video, **protocol)


def entries(*pairs) -> list[dict]:
    return [{"index": n, "n_violations": x, "evidence": "e"} for n, x in pairs]


def reply(*pairs) -> dict:
    return {"by_range": [], "checklist": entries(*pairs), "overall_reasoning": "r"}


# Rules 3, 4, 8 (and 11's lenient reading). The official x_i by hand, K = 4.
VERDICTS = {
    "missing item counts 1 at once (rule 3)": (reply((1, 0), (2, 2), (3, 0)), [0, 2, 0, 1]),
    "repeated index keeps the last (rule 4)": (
        reply((1, 0), (2, 3), (3, 0), (4, 0), (2, 1)),
        [0, 1, 0, 0],
    ),
    "out-of-range index ignored (rule 8)": (
        reply((0, 5), (1, 0), (2, 0), (3, 0), (9, 2)),
        [0, 0, 0, 1],
    ),
    "negative count is 0 (rule 8)": (reply((1, -3), (2, 0), (3, 1), (4, 0)), [0, 0, 1, 0]),
    "all at once": (reply((1, 0), (2, 3), (2, 1), (7, 0), (3, -1)), [0, 1, 0, 1]),
    "bare array (rule 11)": (json.dumps(entries((1, 1), (2, 0), (3, 0), (4, 2))), [1, 0, 0, 2]),
    "fenced in prose (rule 11)": (
        "Verdict:\n```json\n" + json.dumps(reply((1, 0), (2, 0), (3, 4), (4, 0))) + "\n```",
        [0, 0, 4, 0],
    ),
}


@pytest.mark.parametrize("case", VERDICTS)
def test_rules3_4_8_verdict_replies_score_as_the_official_judge(run, rows, video, case):  # noqa: F811
    verdict, official = VERDICTS[case]
    documents, requests = sorting_run(run, rows, video, verdict)
    assert len(by_kind(requests)["polish"]) == 1  # never asked again
    score = documents["score"]
    rubric_ = sum(1 / (x + 1) for x in official) / 4
    assert score["status"] == "ok" and score["violations"] == official
    assert score["rubric"] == pytest.approx(rubric_) and score["final"] == pytest.approx(
        rubric_ / 2
    )
    data = loads_reply(verdict, "checklist") if isinstance(verdict, str) else verdict
    taken = take_verdict(data, 4)
    for key in ("imputed_items", "repeated_items", "ignored_items", "clamped_items"):
        assert score[key] == taken[key]
    assert score["flags"] == []


@pytest.mark.parametrize("cut", [60, 110], ids=["inside the first entry", "after one entry"])
def test_a_verdict_reply_cut_off_is_asked_again_never_scored(run, rows, video, cut):  # noqa: F811
    """Its first span that parses (`[]`, the empty `by_range`) is not its checklist."""
    whole = json.dumps(reply((1, 0), (2, 1), (3, 0), (4, 0)))
    judge = Judge(tier=1, violations=[0, 1, 0, 0], bad_polish=[whole[:cut]])
    documents, requests = run(judge, rows["sorting"], video)
    assert len(by_kind(requests)["polish"]) == 2  # the cut-off reply, then the whole one
    score = documents["score"]
    assert score["status"] == "ok" and score["violations"] == [0, 1, 0, 0]
    assert score["imputed_items"] == [] and score["flags"] == []


def test_rules3_4_8_adjustments_counted():
    taken = take_verdict(reply((1, 0), (2, 3), (2, 1), (7, 0), (3, -1)), 4)
    assert taken["violations"] == [0, 1, 0, 1]
    assert (taken["imputed_items"], taken["repeated_items"]) == ([4], [2])
    assert (taken["ignored_items"], taken["clamped_items"]) == ([7], [3])
    strict = take_verdict(reply((1, 0), (2, 3), (2, 1), (3, 0), (4, 0)), 4, "strict")
    assert strict["violations"] == [0, 3, 0, 0]  # the first of repeats


def test_rule8_unparseable_verdict_scores_every_item_1_and_is_flagged(run, rows, video):  # noqa: F811
    judge = Judge(tier=2, violations=[0], bad_polish=["no JSON at all"] * 2)
    documents, requests = run(judge, rows["sorting"], video)
    assert len(by_kind(requests)["polish"]) == 2  # the client asks again for text that is not JSON
    score = documents["score"]
    assert score["status"] == "ok" and score["violations"] == [1, 1, 1, 1]
    assert score["rubric"] == 0.5 and score["final"] == 0.5 and score["strict_success"] is False
    assert score["imputed_items"] == [1, 2, 3, 4]
    assert [flag.split(":")[0] for flag in score["flags"]] == ["rubric verdict"]


def test_rule7_empty_and_invalid_comments_are_left_out_of_the_verdict(run, rows, video):  # noqa: F811
    judge = Judge(tier=2, violations=[0])

    def noisy(received):
        answer = judge(received)
        if kind(received).startswith("window"):
            shown = [index for index, _ in frames_of(received)]
            answer["evaluations"] += [
                {"frame_indices": [], "comment": "no frames cited"},
                {"frame_indices": [999], "comment": "only a frame not shown"},
                {"frame_indices": shown[:1], "comment": "   "},
            ]
        return answer

    documents, requests = run(noisy, rows["sorting"], video)
    text = by_kind(requests)["polish"][0].texts[0]
    assert "scripted window1" in text
    assert "no frames cited" not in text and "only a frame not shown" not in text
    assert "frames none shown" not in text
    score = documents["score"]
    assert (score["dropped_comments"], score["dropped_citations"]) == (3 * 2, 2)
    assert score["violations"] == [0, 0, 0, 0] and score["final"] == 1.0


def test_rule9_failed_completeness_keeps_the_rubric(run, rows, video):  # noqa: F811
    judge = Judge(tier=2, violations=[0, 1, 0, 0])

    def broken(received):
        return (
            {"tier": 7, "reasoning": "x"} if kind(received) == "completeness" else judge(received)
        )

    documents, requests = run(broken, rows["sorting"], video)
    assert len(by_kind(requests)["completeness"]) == 2
    score = documents["score"]
    assert score["status"] == "ok" and score["violations"] == [0, 1, 0, 0]
    assert score["rubric"] == pytest.approx(0.875)
    assert (score["tier"], score["completeness"], score["final"]) == (None, None, None)
    assert score["strict_success"] is False  # official: the rubric alone decides it then
    assert documents["completeness"]["status"] == "error"
    assert [flag.split(":")[0] for flag in score["flags"]] == ["completeness"]
    assert score["calls"] == 2 + 2 + 1  # rule 12: both completeness attempts count


def test_rule9_failed_window_is_flagged_and_the_instance_still_scored(run, rows, video):  # noqa: F811
    from tests.judge.test_judge_protocol import broken_second_window

    judge = broken_second_window(Judge(tier=2, violations=[0, 0, 0, 0]))
    documents, requests = run(judge, rows["sorting"], video)
    calls = by_kind(requests)
    assert len(calls["window1"]) == 1 + 2 and len(calls["polish"]) == 1
    assert "Window 2 of 2: frames 36-44, t = 2.25-2.75 s\n(none)" in calls["polish"][0].texts[0]
    score = documents["score"]
    assert score["status"] == "ok" and score["final"] == 1.0 and score["strict_success"] is None
    assert score["flags"][0].startswith("rubric round 1 window 2: ")
    assert score["calls"] == 1 + 3 + 1


def test_rule12_calls_count_every_attempt_and_tokens_every_reply(run, rows, video):  # noqa: F811
    judge, asked = Judge(tier=2, violations=[0]), []

    def flaky(received):  # every first attempt of a call answers outside its schema
        asked.append(received)
        first = sum(r.texts == received.texts for r in asked) == 1
        return {"unexpected": True} if first else judge(received)

    documents, requests = run(flaky, rows["sorting"], video)
    score = documents["score"]
    assert score["calls"] == len(requests) == 2 * 4 and score["cached_calls"] == 0
    assert score["tokens"]["prompt"] == sum(_usage(r, "")[0] for r in requests)


def test_rule5_routing_is_data_and_completeness_gets_all(run, rows, video):  # noqa: F811
    row = rows["clock_running"]
    assert row["gt_text"]
    routed, _ = run(Judge(2, [0]), row, video)
    _, requests = run(Judge(2, [0]), row, video, routing={"gt_image": [], "gt_text": []})
    for received in requests:
        described = any(t.startswith("Reference solution:") for t in received.texts)
        assert described is (kind(received) == "completeness")
    sorting, _ = rows["sorting"], None
    _, requests = run(Judge(2, [0]), sorting, video, routing={"gt_image": [], "gt_text": []})
    images = {kind(r): len(r.images) - len(frames_of(r)) for r in requests}
    assert images == {"completeness": 2, "window1": 1, "polish": 0}
    params = [json.loads(judge_params({"protocol": p})) for p in ({}, {"routing": {"gt_text": []}})]
    assert params[0]["protocol"]["routing"]["gt_image"][:2] == ["clock_running", "expand_3d_to_2d"]
    assert params[1]["protocol"]["routing"] == {"gt_image": [], "gt_text": []}


def test_rule5_default_routing_lists(tmp_path):
    routing = Protocol().routing
    assert "sorting" in routing["gt_image"] and "sorting" not in routing["gt_text"]
    assert "leave_parking_lot" in routing["gt_text"] and len(routing["gt_image"]) == 14
    path = tmp_path / "routing.yaml"
    path.write_text("gt_image: [maze_square]\n")
    assert Protocol(routing=str(path)).routing == {"gt_image": ["maze_square"], "gt_text": []}
    with pytest.raises(ValueError, match="judge.protocol.routing"):
        Protocol(routing={"gt_images": []})


def test_rule10_default_templates_carry_the_official_prompt_rules():
    verdict = (TEMPLATES / "verdict.txt").read_text().lower()
    assert "human reviewer" in verdict
    for noise in ("sub-pixel jitter", "one-pixel sliver", "lighting flicker", "micro-drift"):
        assert noise in verdict
    assert "share their boundary frame" in verdict
    assert "two overlapping windows" in verdict
    assert "1 / (x + 1)" in verdict and "mean" in verdict
    system = (TEMPLATES / "window_system.txt").read_text().lower()
    assert "substantive" in system
    for example in ("through a wall", "teleport", "duplicate", "skip"):
        assert example in system
    assert "one or two sentences" in system and "uneventful" in system


def test_rule11_rubric_parsing():
    assert rubric.OVERALL.sub("", "Overall task - Sort the bars") == "Sort the bars"
    assert rubric.OVERALL.sub("", "overall  task：Sort") == "Sort"
    assert rubric.goal_and_checklist({"rubric": ["Overall task: Sort them"]}) == (
        "Sort them",
        ("Overall task: Sort them",),
    )
    assert rubric.goal_and_checklist({"rubric": ["Goal", " ", "Item", ""]}) == ("Goal", ("Item",))
    assert rubric.goal_and_checklist({"answer": "7:45"}, "Move.") == ("Reference answer: 7:45", ())
    assert rubric.goal_and_checklist({}, "Move the car.") == ("Video prompt: Move the car.", ())
    assert rubric.goal_and_checklist({"rubric": [" "]}).startswith("empty rubric")
    assert scores(2, []) == {**scores(2, []), "rubric": 0.0, "final": 0.0, "strict_success": False}


@pytest.mark.parametrize(
    ("protocol", "calls", "windows"),
    [
        ({}, {"completeness": 1, "window1": 2, "window2": 1, "polish": 1}, [10, 3, 9]),
        ({"sampling": "even"}, {"completeness": 1, "window1": 2, "polish": 1}, [10, 3]),
        (
            {"sampling": "even", "even_fps": 2},
            {"completeness": 1, "window1": 1, "polish": 1},
            [6],
        ),
        (
            {"batching": "all_at_once"},
            {"completeness": 1, "window1": 1, "window2": 1, "polish": 1},
            [12, 9],
        ),
    ],
)
def test_switches_sampling_and_batching(run, rows, video, protocol, calls, windows):  # noqa: F811
    documents, requests = run(Judge(2, [0], nominate=[20]), rows["sorting"], video, **protocol)
    assert {k: len(v) for k, v in by_kind(requests).items()} == calls
    assert [len(doc["frames"]) for doc in documents["rubric"]["windows"]] == windows
    score = documents["score"]
    assert score["calls"] == sum(calls.values()) and score["status"] == "ok"
    if protocol.get("batching") == "all_at_once":
        [window] = by_kind(requests)["window1"]
        assert "at most 6" in "\n".join(window.texts)  # ceil(12 / 2)
    params = json.loads(judge_params({"protocol": protocol}))["protocol"]
    assert {key: params[key] for key in protocol} == protocol


@pytest.mark.parametrize(
    ("key", "value"), [("sampling", "uneven"), ("batching", "windowed"), ("verdict", "lax")]
)
def test_unknown_switch_values_are_refused(key, value):
    with pytest.raises(ValueError, match=f"judge.protocol.{key}"):
        Protocol(**{key: value})


def test_rule6_an_answer_next_to_a_rubric_list_reaches_no_call(run, rows, video):  # noqa: F811
    row = rows["clock_running"]
    entry = json.loads(
        (EXAMPLES / "clock_running" / "judge_spec" / "_judge_rubric_clock_running.json").read_text()
    )[row["instance"]]
    assert entry["rubric"] and entry["answer"]
    _, requests = run(Judge(2, [0]), row, video)
    texts = [t for r in requests for t in r.texts]
    assert requests and not any("reference answer" in t.lower() for t in texts)
    assert "Reference answer" not in row["gt_text"]  # the descriptions only


def test_rule11_instance_description_at_the_raw_root(tmp_path):
    root = tmp_path / "bench"
    shutil.copytree(EXAMPLES / "clock_running", root / "clock_running")
    raw = root / "clock_running" / "_raw"
    (raw / "lv1" / "clock_running_lv1_001_gt_desc.json").rename(
        raw / "clock_running_lv1_001_gt_desc.json"
    )
    table = load_instances(root, *META, tasks=["clock_running"], levels=[1])
    own = json.loads((raw / "clock_running_lv1_001_gt_desc.json").read_text())
    assert table.loc["clock_running_lv1_001", "gt_text"].endswith(rubric.as_text(own))


@pytest.mark.parametrize(("verdict", "status"), [("official", "ok"), ("strict", "error")])
def test_rule11_an_entry_without_a_rubric_list_scores_rubric_0(run, rows, video, verdict, status):  # noqa: F811
    row = {**rows["sorting"], "goal": "Reference answer: ABC", "checklist": ()}
    documents, requests = run(Judge(2, [0]), row, video, verdict=verdict)
    assert [kind(r) for r in requests] == ["completeness"]  # no window or verdict call
    score = documents["score"]
    assert score["status"] == status
    if status == "ok":
        assert (score["rubric"], score["final"], score["strict_success"]) == (0.0, 0.0, False)
