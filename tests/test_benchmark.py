"""Tests for reading and validating benchmark folders (workflow_scripts.benchmark)."""

import math
import pickle
import random
from pathlib import Path

import pytest
import yaml
from PIL import Image

from workflow_scripts.benchmark import BenchmarkError, load_instances, select_subset

REPO = Path(__file__).parents[1]
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
    rubric: str | bytes | None = '["Reach the goal.", "No wall is crossed.", "Path is smooth."]',
    standard: str | bytes | None = "2: done; 1: partly; 0: not at all.",
) -> Path:
    """A task folder in the official layout; None leaves a file out."""
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
    maze = make_task(root, "maze", {1: ["b", "a"], 2: ["x"], 3: ["y"]}, prompt="  Go.\n")
    make_task(root, "clock", {1: ["01"], 2: ["01"], 3: ["01"]})
    image(maze / "gt" / "lv1" / "maze_lv1_a.jpg", (20, 20))
    write(maze / "gt" / "lv2" / "maze_lv2_x.txt", "Exit at the bottom.\n")

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
        "goal",
        "checklist",
        "tier_standard",
        "gt_image",
        "gt_text",
    ]
    assert list(table.index) == [
        "clock_lv1_01",
        "clock_lv2_01",
        "clock_lv3_01",
        "maze_lv1_a",
        "maze_lv1_b",
        "maze_lv2_x",
        "maze_lv3_y",
    ]
    row = table.loc["maze_lv1_a"]
    assert (row.task, row.level, row.id) == ("maze", 1, "a")
    assert table.level.dtype.kind == "i"
    assert (row.domain, row.skills, row.overlap_group) == ("puzzles", ("planning",), "overlap")
    assert row.image == str(maze / "input_image" / "lv1" / "maze_lv1_a.png")
    assert row.prompt == "Go."
    assert row.goal == "Reach the goal."
    assert row.checklist == ("No wall is crossed.", "Path is smooth.")
    assert row.tier_standard == "2: done; 1: partly; 0: not at all."
    assert row.gt_image == str(maze / "gt" / "lv1" / "maze_lv1_a.jpg")
    assert row.gt_text is None
    assert table.loc["maze_lv2_x", "gt_text"] == "Exit at the bottom."
    assert table.loc["maze_lv2_x", "gt_image"] is None
    clock = table.loc["clock_lv1_01"]
    assert (clock.domain, clock.skills, clock.overlap_group) == (
        "dynamics",
        ("temporal",),
        "non_overlap",
    )
    assert clock.gt_image is None and clock.gt_text is None


def test_every_problem_is_reported_at_once(tmp_path, meta):
    root = tmp_path / "bench"
    # Instance-level problems, in a task whose own files are fine. Level 3 is never read.
    maze = make_task(root, "maze", {1: ["ok", "square", "dup"], 3: ["unread"]})
    lv1 = maze / "input_image" / "lv1"
    image(lv1 / "maze_lv1_square.png", (32, 32))
    image(lv1 / "maze_lv1_dup.jpg")
    image(lv1 / "maze_lv2_moved.png")
    image(lv1 / "labyrinth_1.png")
    write(lv1 / "maze_lv1_broken.png", b"not a png")
    write(lv1 / "notes.md", "ignored: not an image")
    image(lv1 / "maze_lv1_nearly.png", (321, 180))  # 0.3 % off 16:9: accepted
    write(maze / "gt" / "lv1" / "maze_lv1_ok.txt", b"\xff\xfe bad bytes")
    write(maze / "gt" / "lv1" / "maze_lv1_nearly.png", b"garbage")
    # Task-level problems, reported for each instance of the task.
    make_task(root, "sliding", {1: ["a"], 2: ["a"]}, prompt=None, rubric=None, standard=None)
    make_task(
        root, "clock", {1: ["a"], 2: ["a", "b"]}, prompt=b"\xff", rubric="[1, 2]", standard=" "
    )
    make_task(root, "stranger", {1: ["a"], 2: ["a"]}, rubric='["goal only"]')
    make_task(root, "blank", {1: ["a"], 2: ["a"]}, rubric='["goal", "  "]')
    make_task(root, "broken", {1: ["a"], 2: ["a"]}, rubric="{not json")
    with open(meta[0], "a") as f:
        yaml.safe_dump({"more": {"blank": [], "broken": ["spatial"]}}, f)

    with pytest.raises(BenchmarkError) as caught:
        load_instances(root, *meta, levels=[2, 1])

    expected = [
        ("maze_lv1_square", "image is 32x32, not 16:9"),
        ("maze_lv1_dup", "duplicate instance id, also maze_lv1_dup.jpg"),
        ("maze_lv2_moved", "name says lv2 but the image is in lv1"),
        ("labyrinth_1", "image name is not maze_lv<N>_<id>"),
        ("maze_lv1_broken", "unreadable image (UnidentifiedImageError)"),
        ("maze_lv1_ok", "reference text is not UTF-8 text"),
        ("maze_lv1_nearly", "unreadable reference image (UnidentifiedImageError)"),
        ("maze", "no input images for level 2"),
        ("stranger_lv1_a", "task not in the taxonomy"),
        ("stranger_lv2_a", "task not in the taxonomy"),
        ("stranger_lv1_a", "empty checklist"),
        ("stranger_lv2_a", "empty checklist"),
        ("blank_lv1_a", "empty checklist"),
        ("blank_lv2_a", "empty checklist"),
        ("broken_lv1_a", "rubric is not a JSON list of strings"),
        ("broken_lv2_a", "rubric is not a JSON list of strings"),
    ]
    for instance in ["sliding_lv1_a", "sliding_lv2_a"]:
        expected += [
            (instance, "missing prompt"),
            (instance, "missing rubric"),
            (instance, "missing tier standard"),
        ]
    for instance in ["clock_lv1_a", "clock_lv2_a", "clock_lv2_b"]:
        expected += [
            (instance, "prompt is not UTF-8 text"),
            (instance, "rubric is not a JSON list of strings"),
            (instance, "empty tier standard"),
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
    assert "maze_lv3_unread" not in message and "notes" not in message
    assert pickle.loads(pickle.dumps(error)).problems == error.problems


def test_tasks_and_levels_restrict_what_is_read(tmp_path, meta):
    root = tmp_path / "bench"
    make_task(root, "maze", {1: ["a"], 2: ["a", "b"]})
    make_task(root, "clock", {2: ["a"]})
    make_task(root, "sliding", {2: ["a"]}, prompt=None)
    make_task(root, "stranger", {2: ["a"]})
    image(root / "maze" / "input_image" / "lv1" / "maze_lv1_wide.png", (64, 18))

    table = load_instances(root, *meta, tasks=["maze", "clock"], levels=[2])
    assert list(table.index) == ["clock_lv2_a", "maze_lv2_a", "maze_lv2_b"]

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
        make_task(root, task, {lv: [f"{i:02d}" for i in range(n)] for lv, n in counts.items()})
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
    table = load_instances(
        REPO / "tasks" / "examples",
        REPO / "tasks" / "task_names.yaml",
        REPO / "tasks" / "overlap.yaml",
    )
    assert len(table) == 24
    assert table.groupby(["task", "level"]).size().eq(2).all()
    assert table.task.nunique() == 4
    assert table.groupby("domain").task.nunique().eq(1).all() and table.domain.nunique() == 4
    assert set(select_subset(table, "half", seed=0).groupby(["task", "level"]).size()) == {1}
