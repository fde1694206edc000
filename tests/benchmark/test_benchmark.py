"""Tests for reading and validating benchmark folders (workflow_scripts.benchmark)."""

import json
import math
import os
import pickle
import random
from pathlib import Path

import pytest
import yaml
from PIL import Image

from tests.support.workflow import example_instances
from workflow_scripts.benchmark.instances import BenchmarkError, load_instances, select_subset

REPO = Path(__file__).resolve().parents[2]
TAXONOMY = {
    "puzzles": {"maze": ["planning"], "sliding": ["planning", "spatial"]},
    "dynamics": {"clock": ["temporal"]},
}
OVERLAP = {"overlap": ["maze"], "non_overlap": ["clock"]}


def image(path: Path, size: tuple[int, int] = (32, 18)) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", size, "white").save(path)


def write(path: Path, content: str | bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")


def make_task(
    root: Path,
    task: str,
    ids: dict[int, list[str]],
    prompt: str | bytes | None = "Solve it.",
    rubric: str
    | bytes
    | None = '{"rubric": ["Reach the goal.", "No wall is crossed.", "Smooth."]}',
    standard: str | bytes | None = "2: done; 1: partly; 0: not at all.",
) -> Path:
    """A task folder in the official layout (a task-wide rubric); None leaves a file out."""
    folder = root / task
    for level, level_ids in ids.items():
        for id_ in level_ids:
            image(folder / "input_image" / f"lv{level}" / f"{task}_lv{level}_{id_}.png")
    files = {
        folder / "prompt" / "video_gen_prompt" / f"{task}.txt": prompt,
        folder / "judge_spec" / f"_judge_rubric_{task}.json": rubric,
        folder / "judge_spec" / "_completeness_judge.txt": standard,
    }
    for path, content in files.items():
        if content is not None:
            write(path, content)
    return folder


@pytest.fixture
def meta(tmp_path: Path) -> tuple[Path, Path]:
    """Taxonomy and overlap YAMLs."""
    taxonomy, overlap = tmp_path / "task_names.yaml", tmp_path / "overlap.yaml"
    taxonomy.write_text(yaml.safe_dump(TAXONOMY))
    overlap.write_text(yaml.safe_dump(OVERLAP))
    return taxonomy, overlap


def test_good_root_loads(tmp_path, meta):
    root = tmp_path / "bench"
    maze = make_task(root, "maze", {1: ["002", "001"], 2: ["001"], 3: ["001"]}, prompt="  Go.\n")
    make_task(root, "clock", {1: ["001"], 2: ["001"], 3: ["001"]})
    image(maze / "input_image" / "lv1" / "maze_lv1_001_gt.jpg", (20, 20))
    write(maze / "_raw" / "lv2" / "maze_lv2_001_gt_desc.json", '{"description": "Exit below."}')
    write(maze / "prompt" / "image_gen_prompt" / "maze.txt", "Show the dot at the exit.\n")

    table = load_instances(root, *meta)

    assert table.index.name == "instance"
    assert list(table.columns) == [
        "task",
        "level",
        "id",
        "domain",
        "skills",
        "overlap_group",
        "image",
        "prompt",
        "image_prompt",
        "goal",
        "checklist",
        "tier_standard",
        "gt_image",
        "gt_text",
        "answer",
    ]
    assert list(table.index) == [
        "clock_lv1_001",
        "clock_lv2_001",
        "clock_lv3_001",
        "maze_lv1_001",
        "maze_lv1_002",
        "maze_lv2_001",
        "maze_lv3_001",
    ]
    row = table.loc["maze_lv1_001"]
    assert (row.task, row.level, row.id) == ("maze", 1, "001")
    assert table.level.dtype.kind == "i"
    assert (row.domain, row.skills, row.overlap_group) == ("puzzles", ("planning",), "overlap")
    assert row.image == str(maze / "input_image" / "lv1" / "maze_lv1_001.png")
    assert row.prompt == "Go."
    assert row.image_prompt == "Show the dot at the exit."  # the image branch's
    assert table.loc["clock_lv1_001", "image_prompt"] is None  # a video-only task
    assert row.goal == "Reach the goal."
    assert row.checklist == ("No wall is crossed.", "Smooth.")
    assert row.tier_standard == "2: done; 1: partly; 0: not at all."
    assert row.gt_image == str(maze / "input_image" / "lv1" / "maze_lv1_001_gt.jpg")
    assert row.gt_text is None
    assert table.loc["maze_lv2_001", "gt_text"] == "Exit below."
    assert table.loc["maze_lv2_001", "gt_image"] is None
    clock = table.loc["clock_lv1_001"]
    assert (clock.domain, clock.skills, clock.overlap_group) == (
        "dynamics",
        ("temporal",),
        "non_overlap",
    )
    assert clock.gt_image is None and clock.gt_text is None


def test_every_problem_is_reported_at_once(tmp_path, meta):
    root = tmp_path / "bench"
    # Instance-level problems, in a task whose own files are fine. Level 3 is never read.
    maze = make_task(root, "maze", {1: ["001", "002", "003"], 3: ["004"]})
    lv1 = maze / "input_image" / "lv1"
    image(lv1 / "maze_lv1_002.png", (32, 32))
    image(lv1 / "maze_lv1_003.jpg")
    image(lv1 / "maze_lv2_005.png")
    image(lv1 / "labyrinth_1.png")
    write(lv1 / "maze_lv1_006.png", b"not a png")
    image(lv1 / "maze_lv1_007.png", (1280, 720))
    write(lv1 / "maze_lv1_007.png", (lv1 / "maze_lv1_007.png").read_bytes()[:-40])  # truncated
    write(lv1 / "notes.md", "ignored: not an image")
    image(lv1 / "maze_lv1_008.png", (321, 180))  # 0.3 % off 16:9: accepted
    write(maze / "_raw" / "lv1" / "maze_lv1_001_gt_desc.json", b"\xff\xfe bad bytes")
    write(lv1 / "maze_lv1_008_gt.png", b"garbage")
    # Task-level problems, reported for each instance of the task.
    make_task(root, "sliding", {1: ["001"], 2: ["001"]}, prompt=None, rubric=None, standard=None)
    make_task(
        root,
        "clock",
        {1: ["001"], 2: ["001", "002"]},
        prompt=b"\xff",
        rubric="[1, 2]",
        standard=" ",
    )
    make_task(root, "stranger", {1: ["001"], 2: ["001"]}, rubric='{"rubric": ["goal only"]}')
    make_task(root, "blank", {1: ["001"], 2: ["001"]}, rubric='{"rubric": ["  ", ""]}')
    make_task(root, "broken", {1: ["001"], 2: ["001"]}, rubric="{not json")
    empty = '[{"id": "empty_lv1_001", "rubric": []}, {"id": "empty_lv2_001", "rubric": "text"}]'
    make_task(root, "empty", {1: ["001"], 2: ["001"]}, rubric=empty)
    make_task(root, "dot.ted", {1: ["001"], 2: ["001"]})
    with open(meta[0], "a") as f:
        yaml.safe_dump(
            {"more": {"blank": [], "broken": ["spatial"], "empty": [], "dot.ted": []}}, f
        )

    with pytest.raises(BenchmarkError) as caught:
        load_instances(root, *meta, levels=[2, 1])

    expected = [
        ("maze_lv1_002", "image is 32x32, not 16:9"),
        ("maze_lv1_003", "duplicate instance id, also maze_lv1_003.jpg"),
        ("maze_lv2_005", "name says lv2 but the image is in lv1"),
        ("labyrinth_1", "image name is not maze_lv<N>_<id>"),
        ("maze_lv1_006", "unreadable image (UnidentifiedImageError)"),
        ("maze_lv1_007", "unreadable image (OSError)"),
        ("maze_lv1_001", "reference description is not readable JSON (UnicodeDecodeError)"),
        ("maze_lv1_008", "unreadable reference image (UnidentifiedImageError)"),
        ("maze", "no input images for level 2"),
        ("stranger_lv1_001", "task not in the taxonomy"),
        ("stranger_lv2_001", "task not in the taxonomy"),
        ("blank_lv1_001", "empty rubric"),
        ("blank_lv2_001", "empty rubric"),
        ("broken_lv1_001", "rubric is not readable JSON"),
        ("broken_lv2_001", "rubric is not readable JSON"),
        ("empty_lv1_001", "empty rubric"),
        ("empty_lv2_001", "rubric is not a list of strings"),
        ("dot.ted_lv1_001", "task name has characters other than letters, digits and _"),
        ("dot.ted_lv2_001", "task name has characters other than letters, digits and _"),
    ]
    for instance in ["sliding_lv1_001", "sliding_lv2_001"]:
        expected += [
            (instance, "missing prompt"),
            (instance, "missing rubric"),
            (instance, "missing tier standard"),
        ]
    for instance in ["clock_lv1_001", "clock_lv2_001", "clock_lv2_002"]:
        expected += [
            (instance, "prompt is not UTF-8 text"),
            (instance, "empty tier standard"),
            (instance, "no rubric entry (looked up"),
        ]
    error = caught.value
    message = str(error)
    lines = message.splitlines()
    assert lines[0] == f"{root}: {len(expected)} problem(s) in the benchmark:"
    for instance, problem in expected:
        assert any(line.startswith(f"  - {instance}: {problem}") for line in lines), (
            instance,
            problem,
        )
    assert len(error.problems) == len(expected) == len(lines) - 1
    assert all(line.endswith(")") for line in lines[1:])
    assert "maze_lv3_004" not in message and "notes" not in message
    assert pickle.loads(pickle.dumps(error)).problems == error.problems


def test_the_image_check_is_remembered_until_the_file_changes(tmp_path, meta):
    root, cache = tmp_path / "bench", tmp_path / "cache" / "images.json"
    make_task(root, "maze", {1: ["001"], 2: ["001"], 3: ["001"]})
    load_instances(root, *meta, tasks=["maze"], image_cache=cache)
    assert len(json.loads(cache.read_text())) == 3
    path = root / "maze" / "input_image" / "lv1" / "maze_lv1_001.png"
    size = path.stat().st_size
    with open(path, "r+b") as f:  # same size and mtime: the check is not repeated
        stamp = path.stat().st_mtime_ns
        f.seek(size - 30)
        f.write(b"\0" * 30)
    os.utime(path, ns=(stamp, stamp))
    load_instances(root, *meta, tasks=["maze"], image_cache=cache)
    os.utime(path, ns=(stamp + 10**9, stamp + 10**9))  # touched: checked again, and caught
    with pytest.raises(BenchmarkError, match="maze_lv1_001: unreadable image"):
        load_instances(root, *meta, tasks=["maze"], image_cache=cache)


def test_tasks_and_levels_restrict_what_is_read(tmp_path, meta):
    root = tmp_path / "bench"
    make_task(root, "maze", {1: ["001"], 2: ["001", "002"]})
    make_task(root, "clock", {2: ["001"]})
    make_task(root, "sliding", {2: ["001"]}, prompt=None)
    make_task(root, "stranger", {2: ["001"]})
    image(root / "maze" / "input_image" / "lv1" / "maze_lv1_003.png", (64, 18))

    table = load_instances(root, *meta, tasks=["maze", "clock"], levels=[2])
    assert list(table.index) == ["clock_lv2_001", "maze_lv2_001", "maze_lv2_002"]

    with pytest.raises(BenchmarkError) as caught:
        load_instances(root, *meta, tasks=["maze", "unknown"], levels=[2])
    assert caught.value.problems == [
        f"unknown: task not in the taxonomy ({meta[0]})",
        f"unknown: task folder not found ({root / 'unknown'})",
    ]


@pytest.fixture
def many(tmp_path, meta):
    """Two tasks with 7, 20 and 1 instances at levels 1, 2 and 3."""
    root = tmp_path / "bench"
    counts = {1: 7, 2: 20, 3: 1}
    for task in ["maze", "clock"]:
        make_task(root, task, {lv: [f"{i:03d}" for i in range(n)] for lv, n in counts.items()})
    return load_instances(root, *meta)


def test_subset_half_is_seeded_per_task_and_level(many):
    half = select_subset(many, "half", seed=0)
    sizes = half.groupby(["task", "level"]).size().to_dict()
    full_sizes = many.groupby(["task", "level"]).size().to_dict()
    assert sizes == {key: math.ceil(n / 2) for key, n in full_sizes.items()}
    assert list(half.index) == [i for i in many.index if i in set(half.index)]
    assert half.equals(select_subset(many, "half", seed=0))
    assert not half.index.equals(select_subset(many, "half", seed=1).index)
    # The draw is pinned so that the paper's subset stays reproducible.
    ids = sorted(many.query("task == 'maze' and level == 2").id)
    drawn = random.Random("0/maze/lv2").sample(ids, 10)
    assert sorted(half.query("task == 'maze' and level == 2").id) == sorted(drawn)


def test_subset_full_and_unknown(many):
    assert select_subset(many, "full", seed=0).equals(many)
    with pytest.raises(ValueError, match="'quarter'"):
        select_subset(many, "quarter", seed=0)


def test_bundled_examples_load():
    table = example_instances()
    assert len(table) == 24
    assert table.groupby(["task", "level"]).size().eq(2).all()
    assert table.task.nunique() == 4
    assert table.groupby("domain").task.nunique().eq(1).all() and table.domain.nunique() == 4
    assert set(select_subset(table, "half", seed=0).groupby(["task", "level"]).size()) == {1}


def test_an_entry_without_a_rubric_list_falls_back_as_the_official_judge(tmp_path, meta):
    """Its `answer`, else the video prompt, is the goal; no checklist (the judge scores 0)."""
    root = tmp_path / "bench"
    rubrics = '[{"id": "maze_lv1_001", "answer": {"exit": "down"}}, {"id": "maze_lv1_002"}]'
    make_task(root, "maze", {1: ["001", "002"]}, rubric=rubrics)
    table = load_instances(root, *meta, tasks=["maze"], levels=[1])
    assert table.loc["maze_lv1_001", "goal"] == 'Reference answer: {"exit":"down"}'
    assert table.loc["maze_lv1_002", "goal"] == "Video prompt: Solve it."
    assert list(table["checklist"].map(len)) == [0, 0] and table["gt_text"].isna().all()
    # the image judge's reference answer (Table 19), as compact JSON; none without one
    assert table.loc["maze_lv1_001", "answer"] == '{"exit":"down"}'
    assert table.loc["maze_lv1_002", "answer"] is None
