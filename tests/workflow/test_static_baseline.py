"""The shortcut baseline (`source: static`, the registry's `static_image`): each instance's
input image held still for the clip's length by a local job, judged, tabled and planned
like any model, at no GPU time and no cost."""

from __future__ import annotations

import json

import decord
import numpy as np
import pandas as pd
from PIL import Image

from tests.support.fake_vlm import FakeVLM
from tests.support.scripted_judge import Judge
from tests.support.workflow import default_config, snakemake

INSTANCES = ["maze_square_lv1_001", "maze_square_lv1_002"]


def test_the_held_image_is_judged_like_any_model_at_no_cost(tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_VLM_KEY", "test-key")
    config = default_config(tmp_path, tasks=["maze_square"], levels=[1], subset="full")
    config["models"] = ["static_image"]
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
    costs = pd.read_csv(results / "tables" / "costs.csv").set_index(["model", "judge"])
    assert costs.loc[("static_image", "generate"), ["gpu_hours", "cost"]].tolist() == [0, 0]
    finals = pd.read_csv(results / "tables" / "final_by_domain_level.csv")
    row = finals.query("model == 'static_image' and domain == 'overall' and level == 'avg'")
    assert row["n"].item() == 2
