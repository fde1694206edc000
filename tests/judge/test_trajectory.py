"""Scores along the trajectory: `judge.checkpoints` through Snakemake, the real google-genai
client against FakeVLM, a judge that scores a video by how bright its frames are."""

from __future__ import annotations

import io
import json
import re

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from tests.support.fake_vlm import FakeVLM, Received
from tests.support.scripted_judge import checklist_length, kind
from tests.support.workflow import default_config, snakemake
from vgi_models.video import checkpoint_name, write_video
from workflow_scripts.common import layout
from workflow_scripts.judge.settings import judge_params

STEPS = [4, 10, 20, 40]
INSTANCES = ["sorting_lv1_001", "sorting_lv1_002"]
# brightness of each (model, instance)'s checkpoint videos by step; "video": video.mp4
BRIGHTNESS = {
    ("tiny_wan22", "sorting_lv1_001"): {4: 40, 10: 120, 20: 200, 40: 200, "video": 200},
    ("tiny_wan22", "sorting_lv1_002"): {4: 40, 10: 40, 20: 120, 40: 200, "video": 200},
    ("tiny_ltx23", "sorting_lv1_001"): {4: 120, 10: 120, 20: 120, 40: 120, "video": 120},
    ("tiny_ltx23", "sorting_lv1_002"): {4: 40, 10: 200, 20: 200, 40: 200, "video": 200},
}
TIER = {40: 0, 120: 1, 200: 2}  # what the judge sees -> completeness tier
VIOLATIONS = {40: 3, 120: 1, 200: 0}  # -> x_i of every checklist item
VALUES = ("completeness", "rubric", "final")


def level(image: bytes) -> int:
    """The brightness level (40, 120 or 200) nearest a frame's mean."""
    mean = np.asarray(Image.open(io.BytesIO(image)).convert("L")).mean()
    return min(TIER, key=lambda value: abs(value - mean))


def brightness_judge(received: Received) -> dict:
    """Tier and violations from the frames' brightness (the last image is a frame)."""
    what = kind(received)
    if what == "completeness":
        return {"tier": TIER[level(received.images[-1])], "reasoning": "by brightness"}
    if what.startswith("window"):
        frames = [int(m[1]) for t in received.texts if (m := re.fullmatch(r"frame (\d+),.*", t))]
        comment = f"brightness {level(received.images[-1])}"
        return {
            "evaluations": [{"frame_indices": frames, "comment": comment}],
            "frames_to_inspect_closely": [],
        }
    seen = int(re.search(r"brightness (\d+)", "\n".join(received.texts))[1])
    k = checklist_length(received)
    items = [
        {"index": n, "n_violations": VIOLATIONS[seen], "evidence": "e"} for n in range(1, k + 1)
    ]
    return {"by_range": [], "checklist": items, "overall_reasoning": "by brightness"}


def expected(model: str, step) -> dict:
    """completeness, rubric, final means over both instances, as the judge above scores."""
    values = [BRIGHTNESS[model, instance][step] for instance in INSTANCES]
    completeness = [TIER[v] / 2 for v in values]
    rubric = [1 / (VIOLATIONS[v] + 1) for v in values]
    final = [c * r for c, r in zip(completeness, rubric, strict=True)]
    return {name: np.mean(x) for name, x in zip(VALUES, (completeness, rubric, final), strict=True)}


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    """Generated outputs in place (generate has its own tests): 9-frame checkpoints and
    videos of one flat brightness each."""
    monkeypatch.setenv("FAKE_VLM_KEY", "test-key")
    for (model, instance), levels in BRIGHTNESS.items():
        run = tmp_path / "results" / model / "sorting" / instance
        for step, value in levels.items():
            name = "video.mp4" if step == "video" else f"denoise/{checkpoint_name(step, 'x0')}"
            write_video(np.full((9, 144, 256, 3), value, np.uint8), run / name, fps=16)
        (run / "generation.json").write_text("{}")
    return tmp_path


def config_of(workdir, fake_url, checkpoints) -> dict:
    config = default_config(workdir, tasks=["sorting"], levels=[1], subset="full")
    config.update(models=["tiny_wan22", "tiny_ltx23"], denoise={"steps": STEPS, "decode": "x0"})
    config["judge"] = {"enabled": True, "model": "fake", "base_url": fake_url}
    config["judge"].update(api_key_env="FAKE_VLM_KEY", checkpoints=checkpoints)
    return config


def test_scores_along_the_steps_one_job_per_model_and_task(workdir):
    with FakeVLM(brightness_judge) as fake:
        config = config_of(workdir, fake.url, [4, 10, 20])
        result = snakemake(workdir, config, "trajectory_scores")
        assert result.returncode == 0, result.stdout[-3000:]
    # 9 frames at 16 fps: per video 1 completeness, 1 window and 1 verdict call; 4 videos
    # (3 checkpoints + the video) x 2 models x 2 instances, the same frames asked once (cache)
    where = [(workdir / "results", m, "sorting", i) for m, i in BRIGHTNESS]
    documents = [
        score
        for run in where
        for score in [
            *json.loads(layout.checkpoint_scores_file(*run).read_text())["steps"],
            json.loads(layout.score_file(*run).read_text()),
        ]
    ]
    assert [s["calls"] + s["cached_calls"] for s in documents] == [3] * 16
    assert sum(s["calls"] for s in documents) == len(fake.requests) < 3 * 16
    jobs = re.findall(r"^(?:local)?rule (\w+):", result.stdout, re.M)
    assert sorted(set(jobs)) == [
        "judge",
        "judge_checkpoints",
        "prepare_frames",
        "trajectory_scores",
    ]
    assert (
        jobs.count("judge_checkpoints") == jobs.count("judge") == jobs.count("prepare_frames") == 2
    )

    run = (workdir / "results", "tiny_wan22", "sorting", "sorting_lv1_002")
    scores = json.loads(layout.checkpoint_scores_file(*run).read_text())
    assert scores["status"] == "ok" and [s["step"] for s in scores["steps"]] == [4, 10, 20]
    assert [(s["tier"], s["violations"][0]) for s in scores["steps"]] == [(0, 3), (0, 3), (1, 1)]
    for step in ("step04", "step10", "step20"):
        folder = layout.checkpoint_scores_file(*run).parent / step
        passes = sorted(p.name for p in folder.iterdir())
        assert passes == ["completeness.json", "rubric.json", "score.json"]

    table = pd.read_csv(
        workdir / "results" / "tables" / "trajectory_scores.csv", dtype={"step": str}
    )
    assert table[["model", "step", "n"]].values.tolist() == [
        [model, step, 2]
        for model in ("tiny_wan22", "tiny_ltx23")
        for step in ("4", "10", "20", "final")
    ]
    for row in table.itertuples():
        want = expected(row.model, "video" if row.step == "final" else int(row.step))
        assert [getattr(row, v) for v in VALUES] == pytest.approx(list(want.values()))
        assert row.final_ci_low <= row.final <= row.final_ci_high
    with Image.open(workdir / "results" / "plots" / "trajectory_scores.png") as plot:
        assert plot.width > 300

    again = snakemake(workdir, config, "trajectory_scores", "-n")
    assert "Nothing to be done" in again.stdout, again.stdout[-3000:]


def test_off_by_default_and_never_a_reason_to_rerun_the_judge(workdir):
    judge = {"model": "fake", "checkpoints": None}
    assert judge_params(judge) == judge_params({**judge, "checkpoints": [4, 10]})
    off = snakemake(workdir, config_of(workdir, "http://127.0.0.1:9", None), "-n")
    assert off.returncode == 0 and "judge_checkpoints" not in off.stdout, off.stdout[-3000:]
    on = snakemake(workdir, config_of(workdir, "http://127.0.0.1:9", [10, 40]), "-n")
    assert re.search(r"^judge_checkpoints\s+2$", on.stdout, re.M), on.stdout[-3000:]
    assert re.search(r"^trajectory_scores\s+1$", on.stdout, re.M)
    bad = snakemake(workdir, config_of(workdir, "http://127.0.0.1:9", [5]), "-n")
    assert bad.returncode and "judge.checkpoints: step(s) [5] not in denoise.steps" in bad.stdout
