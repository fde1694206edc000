"""The release's shapes (tests/support/release.py) through the reader and the real workflow, and
videos made elsewhere (`source: videos`) judged like generated ones."""

from __future__ import annotations

import json
import re
import shutil

import pandas as pd
import pytest
import yaml

from tests.support.fake_vlm import FakeVLM
from tests.support.release import CHECKLISTS, INSTANCES, break_release, make_release, write_videos
from tests.support.scripted_judge import Judge, checklist_length
from tests.support.videos import videos_config
from tests.support.workflow import META, REPO, default_config, snakemake
from workflow_scripts.benchmark import rubric
from workflow_scripts.benchmark.instances import load_instances
from workflow_scripts.benchmark.made_elsewhere import find_outputs
from workflow_scripts.common import layout


@pytest.fixture
def release(tmp_path):
    return make_release(tmp_path / "bench_data")


def test_release_shapes_give_each_instance_its_own_rubric_and_references(release):
    table = load_instances(release, *META, levels=[1])
    assert sorted(table.index) == sorted(CHECKLISTS)  # no `_gt` image is an instance
    for instance, (goal, checklist) in CHECKLISTS.items():
        assert (table.loc[instance, "goal"], list(table.loc[instance, "checklist"])) == (
            goal,
            checklist,
        )
    gt_image, gt_text = table["gt_image"].to_dict(), table["gt_text"].to_dict()
    maze = release / "maze_square" / "input_image" / "lv1"
    assert gt_image["maze_square_lv1_002"] == str(maze / "maze_square_lv1_002_gt.png")
    assert gt_image["sorting_lv1_001"].endswith("_raw/lv1/sorting_lv1_001_sim_gt.png")
    assert gt_image["clock_running_lv1_001"] is None
    assert gt_text == {
        "maze_square_lv1_001": None,
        "maze_square_lv1_002": None,  # its `answer` is not shown (the entry has a rubric)
        "clock_running_lv1_001": "An hour.\n\nEnds at 4:00.",  # task-wide first
        "clock_running_lv1_002": 'An hour.\n\n{"end":[5,0]}',
        "sorting_lv1_001": None,
    }


@pytest.mark.parametrize(
    ("keys", "expected"),
    [
        (["t_lv1_001", "t_001", "default"], "t_lv1_001"),
        (["t_001", "t_default", "default"], "t_001"),
        (["t_default", "default", "t", "rubric"], "t_default"),
        (["default", "t", "rubric"], "default"),
        (["t", "rubric", "other"], "t"),
        (["rubric", "other"], "rubric"),
        (["t_lv1_002"], "t_lv1_002"),  # the only entry
        (["t_lv1_002", "t_lv1_003"], None),
    ],
)
def test_rubric_lookup_order(keys, expected):
    found = {key: {"rubric": [key]} for key in keys}
    entry = rubric.select(found, "t", 1, "001")
    assert (entry and entry["rubric"][0]) == expected


def test_release_dry_runs_to_a_generate_job_per_instance(release, tmp_path, monkeypatch):
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    config = default_config(tmp_path, root=str(release), levels=[1], subset="full")
    result = snakemake(tmp_path, config, "-n", "generate_all")
    assert result.returncode == 0, result.stdout[-3000:]
    jobs = re.findall(r"rule generate:\n(?:.*\n)*?\s+wildcards: (.*)", result.stdout)
    assert sorted(jobs) == sorted(
        f"model=tiny_wan22, task={task}, instance={instance}"
        for task, instances in INSTANCES.items()
        for instance in instances
    )


def test_broken_release_is_reported_all_at_once_by_id_and_no_job_runs(release, tmp_path):
    expected = break_release(release)
    config = default_config(tmp_path, root=str(release), levels=[1], subset="full")
    result = snakemake(tmp_path, config)
    assert result.returncode != 0
    lines = result.stdout.splitlines()
    for instance, problem in expected.items():
        assert any(f"- {instance}: {problem}" in line for line in lines), (instance, problem)
    assert "problem(s) found before scheduling any job" in result.stdout
    assert not (tmp_path / "results").exists()


def ext_config(tmp_path, release, folder):
    """The default config on `release` (level 1, every instance) with one model, `ext`: the
    videos in `folder`."""
    return videos_config(tmp_path, {"ext": folder}, root=str(release), levels=[1], subset="full")


def test_find_videos_with_or_without_prefix(release, tmp_path):
    table = load_instances(release, *META, levels=[1])
    folder = tmp_path / "eval_res" / "published"
    write_videos(folder, prefix="published")
    (folder / "sorting" / "published_sorting_lv1_001.mp4").rename(
        folder / "sorting" / "sorting_lv1_001.mp4"
    )
    shutil.copy(
        folder / "sorting" / "sorting_lv1_001.mp4", folder / "sorting" / "ext_sorting_lv1_001.mp4"
    )
    (folder / "maze_square" / "published_maze_square_lv1_002.mp4").unlink()
    videos, problems, missing = find_outputs("ext", str(folder), table)
    assert videos["maze_square_lv1_001"].endswith("maze_square/published_maze_square_lv1_001.mp4")
    assert problems == [
        "sorting_lv1_001: model 'ext' has two videos, ext_sorting_lv1_001.mp4 and "
        f"sorting_lv1_001.mp4 ({folder / 'sorting'})",
    ]
    assert missing == {
        "maze_square_lv1_002": "published_maze_square_lv1_002.mp4 or "
        f"ext_maze_square_lv1_002.mp4 or maze_square_lv1_002.mp4 in {folder / 'maze_square'}"
    }


def test_a_selected_instance_without_a_video_is_counted_never_a_stop(release, tmp_path):
    """As the official judge judges the files a model's folder holds: the run goes on
    without the missing video, which tables/coverage.csv counts."""
    folder = tmp_path / "eval_res" / "ext"
    write_videos(folder)
    (folder / "clock_running" / "clock_running_lv1_002.mp4").unlink()
    result = snakemake(tmp_path, ext_config(tmp_path, release, folder), "-n")
    assert result.returncode == 0, result.stdout[-3000:]
    assert "clock_running_lv1_002/video.mp4" not in result.stdout
    assert "clock_running_lv1_001/video.mp4" in result.stdout
    result = snakemake(tmp_path, ext_config(tmp_path, release, folder), "coverage")
    assert result.returncode == 0, result.stdout[-3000:]
    table = pd.read_csv(tmp_path / "results" / "tables" / "coverage.csv", dtype={"level": str})
    assert table[["model", "level", "selected", "found", "missing"]].values.tolist() == [
        ["ext", "1", 5, 4, 1],
        ["ext", "all", 5, 4, 1],
    ]
    missing = pd.read_csv(tmp_path / "results" / "tables" / "coverage_missing.csv")
    assert missing["instance"].tolist() == ["clock_running_lv1_002"]


def test_videos_made_elsewhere_run_through_all(release, tmp_path, monkeypatch):
    """5 published-style videos: judged, tabulated, in the gallery and exported; no
    generate job, no transitions; each judge call reads its own instance's checklist."""
    folder = tmp_path / "video_model_res" / "some_model"
    write_videos(folder)
    config = ext_config(tmp_path, release, folder)
    monkeypatch.setenv("FAKE_VLM_KEY", "test-key")
    with FakeVLM(Judge(tier=2, violations=[0, 1])) as fake:
        config["judge"] = {"enabled": True, "base_url": fake.url, "api_key_env": "FAKE_VLM_KEY"}
        result = snakemake(tmp_path, config)
    assert result.returncode == 0, result.stdout[-3000:]
    assert "No transition labels or trajectory tables for ext" in result.stdout
    assert "rule generate:" not in result.stdout and "label_transitions" not in result.stdout

    results = tmp_path / "results"
    for instance, (_, checklist) in CHECKLISTS.items():
        task = instance.rsplit("_lv", 1)[0]
        score = json.loads(layout.score_file(results, "ext", task, instance).read_text())
        assert score["status"] == "ok" and len(score["violations"]) == len(checklist), instance
    # Every rubric call carries one instance's own goal and checklist (K items: verdict).
    rubric_calls = 0
    for request in fake.requests:
        properties = (request.schema or {}).get("properties", {})
        if "evaluations" in properties or "checklist" in properties:
            text = "\n".join(request.texts)
            own = [i for i, (goal, items) in CHECKLISTS.items() if goal in text]
            assert len(own) == 1, text
            assert all(item in text for item in CHECKLISTS[own[0]][1]), text
            if "checklist" in properties:
                k = len(CHECKLISTS[own[0]][1])
                assert checklist_length(request) == k
            rubric_calls += 1
    assert rubric_calls == 2 * 5  # a window and a verdict per video

    overall = pd.read_csv(results / "tables" / "final_by_domain_level.csv")
    row = overall.query("model == 'ext' and domain == 'overall' and level == 'avg'")
    assert row["n"].item() == 5
    errors = pd.read_csv(results / "tables" / "errors.csv")
    ext = errors.query("model == 'ext'")
    assert (ext["ok"].item(), ext["transitions_missing"].item()) == (5, 0)  # none to label
    assert "ext" in (results / "gallery" / "index.html").read_text()
    assert {p.name for p in (results / "gallery" / "ext").glob("*.html")} == {
        f"{task}.html" for task in INSTANCES
    }
    assert len(list((results / "gallery" / "ext" / "sheets").glob("*.png"))) == 5
    exported = [p.name for p in (results / "eval_res" / "ext").glob("*/*.mp4")]
    assert len(exported) == 5
    for name in exported:  # the official judge's own pattern for output names
        assert re.fullmatch(r"ext_(maze_square|clock_running|sorting)_(lv\d)_(\d{3})\.mp4", name)


def test_beside_a_generated_model_only_that_one_gets_gpu_jobs_and_transitions(
    release, tmp_path, monkeypatch
):
    monkeypatch.setenv("GEMINI_API_KEY", "not-used-by-a-dry-run")
    folder = tmp_path / "eval_res" / "ext"
    write_videos(folder, prefix="ext")
    config = ext_config(tmp_path, release, folder)
    registry = yaml.safe_load((REPO / "config" / "models.yaml").read_text(encoding="utf-8"))
    registry["ext"] = {"source": "videos", "videos": str(folder)}
    (tmp_path / "models.yaml").write_text(yaml.safe_dump(registry))
    config["models"], config["judge"] = ["tiny_wan22", "ext"], {"enabled": True}
    result = snakemake(tmp_path, config, "-n")
    assert result.returncode == 0, result.stdout[-3000:]
    jobs = dict(re.findall(r"^(\w+)\s+(\d+)$", result.stdout.split("Job stats:")[1], re.M))
    assert {rule: int(jobs[rule]) for rule in ("generate", "import_video", "judge")} == {
        "generate": 5,
        "import_video": 5,
        "judge": 6,  # one per (model, task): 2 models x 3 tasks
    }
    assert int(jobs["label_transitions"]) == 3  # the generated model's tasks
    assert (
        re.findall(r"rule generate:\n(?:.*\n)*?\s+wildcards: model=(\w+)", result.stdout)
        == ["tiny_wan22"] * 5
    )
