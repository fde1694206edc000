"""The shortcut baselines (`source: static`: the registry's `static_image`, `noisy_image`,
`panned_image`, `other_instance`): a video made from an input image by a local job, judged,
tabled and planned like any model, at no GPU time and no cost."""

from __future__ import annotations

import json
from itertools import pairwise

import decord
import numpy as np
import pandas as pd
import pytest
import yaml
from PIL import Image

from tests.support.fake_vlm import FakeVLM
from tests.support.scripted_judge import Judge
from tests.support.workflow import REPO, default_config, snakemake
from workflow_scripts.benchmark.study import StudyError, load_study, next_in_task
from workflow_scripts.held_image import shortcut_frames

INSTANCES = ["maze_square_lv1_001", "maze_square_lv1_002"]


def test_the_held_image_is_judged_like_any_model_at_no_cost(tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_VLM_KEY", "test-key")
    config = default_config(tmp_path, tasks=["maze_square"], levels=[1], subset="full")
    config["models"] = ["static_image", "other_instance"]
    with FakeVLM(Judge(tier=2, violations=[0])) as fake:
        config["judge"] = {"enabled": True, "base_url": fake.url, "api_key_env": "FAKE_VLM_KEY"}
        plan = snakemake(tmp_path, config, "plan")
        assert plan.returncode == 0, plan.stdout[-3000:]
        planned = pd.read_csv(tmp_path / "results" / "plan.csv").set_index("model")
        result = snakemake(tmp_path, config, "tables")
        assert result.returncode == 0, result.stdout[-3000:]
    assert "rule hold_image:" in result.stdout and "rule generate:" not in result.stdout
    assert planned.loc["static_image", ["videos_left", "gpu_hours_left"]].tolist() == [2, 0]
    results = tmp_path / "results"
    for instance in INSTANCES:
        run = results / "static_image" / "maze_square" / instance
        meta = json.loads((run / "generation.json").read_text())
        assert meta["status"] == "ok" and meta["settings"]["source"] == "static"
        frames = decord.VideoReader(str(run / "video.mp4"))
        assert len(frames) == 81 and frames.get_avg_fps() == 16
        first, last = (frames[k].asnumpy().astype(float) for k in (0, 80))
        image = Image.open(meta["image"]).convert("RGB")
        assert image.size == (640, 360) and first.shape == (368, 640, 3)  # to 16s, as written
        image = np.asarray(image.resize((640, 368), Image.BICUBIC), float)
        assert np.abs(first - image).mean() < 4  # the image, but for H.264's loss
        assert np.abs(first - last).max() <= 8  # held still
        score = json.loads((run.parent / "judge" / instance / "score.json").read_text())
        assert score["status"] == "ok" and score["final"] is not None
    for instance, other in zip(INSTANCES, INSTANCES[::-1], strict=True):  # each the other's
        run = results / "other_instance" / "maze_square" / instance
        assert json.loads((run / "generation.json").read_text())["image"].endswith(f"{other}.png")
        shown = decord.VideoReader(str(run / "video.mp4"))[0].asnumpy().astype(float)
        held = results / "static_image" / "maze_square" / other / "video.mp4"
        assert np.abs(shown - decord.VideoReader(str(held))[0].asnumpy()).mean() < 1
    costs = pd.read_csv(results / "tables" / "costs.csv").set_index(["model", "judge"])
    assert costs.loc[("static_image", "generate"), ["gpu_hours", "cost"]].tolist() == [0, 0]
    finals = pd.read_csv(results / "tables" / "final_by_domain_level.csv")
    rows = finals.query("domain == 'overall' and level == 'avg'").set_index("model")
    assert rows.loc[["static_image", "other_instance"], "n"].tolist() == [2, 2]


GENERATION = {"num_frames": 5, "fps": 4}


def test_noise_grows_and_the_view_pans():
    ramp = np.linspace(60, 200, 160).astype(np.uint8)  # a left-to-right ramp, never clipped
    image = np.broadcast_to(ramp[None, :, None], (90, 160, 3)).copy()
    held = list(shortcut_frames(image, GENERATION))
    assert len(held) == 5 and all(np.array_equal(frame, image) for frame in held)
    noise = {**GENERATION, "motion": "noise", "noise_std": 40, "noise_seed": 3}
    noisy = list(shortcut_frames(image, noise))
    spread = [np.std(frame.astype(float) - image) for frame in noisy]
    assert spread[0] == 0 and all(a < b for a, b in pairwise(spread))
    assert spread[-1] == pytest.approx(40, abs=3)  # noise_std at the last frame (some clipped)
    again = shortcut_frames(image, noise)  # the same seed: the same noise
    assert all(np.array_equal(a, b) for a, b in zip(noisy, again, strict=True))
    height, width = image.shape[:2]
    view = round(width * 0.8)
    panned = list(shortcut_frames(image, {**GENERATION, "motion": "pan", "pan": 0.2}))
    for frame, left in ((panned[0], 0), (panned[-1], width - view)):
        crop = Image.fromarray(image).crop((left, 0, left + view, height))
        assert np.array_equal(frame, np.asarray(crop.resize((width, height), Image.BICUBIC)))
    assert not np.array_equal(panned[0], panned[-1])


def test_another_instance_of_the_same_task_and_a_task_with_one(tmp_path):
    rows = pd.DataFrame(
        {"task": ["a", "b", "a", "a"]}, index=["a_lv1_2", "b_lv1_1", "a_lv1_1", "a_lv2_1"]
    )
    assert next_in_task(rows) == {
        "a_lv1_1": "a_lv1_2",
        "a_lv1_2": "a_lv2_1",
        "a_lv2_1": "a_lv1_1",
        "b_lv1_1": "b_lv1_1",
    }
    config = default_config(tmp_path, tasks=["maze_square", "sorting"], levels=[1])  # half: one
    config["models"] = ["other_instance", "static_image"]
    registry = yaml.safe_load((REPO / "config" / "models.yaml").read_text(encoding="utf-8"))
    with pytest.raises(StudyError) as err:
        load_study(config, registry)
    assert [p for p in err.value.problems if "motion: swap" in p] == [
        f"model(s) other_instance (motion: swap) show another instance of the same task, but "
        f"task {task} has one selected instance: select more (benchmark.levels, subset) or "
        "leave these models out"
        for task in ("maze_square", "sorting")
    ]
