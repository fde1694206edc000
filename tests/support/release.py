"""A small benchmark in the shapes of the real VGI-Bench release (`bench_data/`), and its
broken twin, for tests.

Level 1 of three tasks of tasks/task_names.yaml, 3-digit ids, 5 instances:

- maze_square (001, 002): a per-instance rubric list in UTF-8 with a BOM, "Overall task:"
  prefixes, one `answer`, checklists of 2 and 3 items; `_gt` images beside the inputs.
- clock_running (001, 002): an object keyed by id (`<task>_<id>` for 001, the task's
  `default` for 002); `_gt_desc` task-wide and per instance under `_raw/`.
- sorting (001): one task-wide `{"rubric", "answer"}`; a `_raw/.../_sim_gt.png` image.

Every task also has `prompt/image_gen_prompt/` (the image branch's prompt).
"""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

from PIL import Image, ImageDraw

from tests.support import videos
from tests.support.videos import clip

INSTANCES = {
    "maze_square": ["maze_square_lv1_001", "maze_square_lv1_002"],
    "clock_running": ["clock_running_lv1_001", "clock_running_lv1_002"],
    "sorting": ["sorting_lv1_001"],
}
MAZE_RUBRICS = {
    "maze_square_lv1_001": ["Overall task: Walk the dot out.", "Stay in lv1_001's corridors."],
    "maze_square_lv1_002": [
        "Overall task: Walk the dot to the flag.",
        "Never cross lv1_002's walls.",
        "Finish on lv1_002's flag.",
    ],
}
# What each instance's judge must read: goal and checklist, after the lookup.
CHECKLISTS = {
    "maze_square_lv1_001": ("Walk the dot out.", ["Stay in lv1_001's corridors."]),
    "maze_square_lv1_002": (
        "Walk the dot to the flag.",
        ["Never cross lv1_002's walls.", "Finish on lv1_002's flag."],
    ),
    "clock_running_lv1_001": ("Run the clock an hour.", ["Hands turn clockwise (001)."]),
    "clock_running_lv1_002": ("Let the clock run.", ["Overall task: Let the clock run."]),
    "sorting_lv1_001": ("Sort the bars.", ["Shortest left.", "Tallest right."]),
}


def picture(path: Path, seed: int, size: tuple[int, int] = (128, 72)) -> None:
    """A small 16:9 PNG with shapes on it."""
    rng = random.Random(seed)
    image = Image.new("RGB", size, (240, 240, 235))
    draw = ImageDraw.Draw(image)
    for _ in range(6):
        x, y = rng.randrange(size[0] - 20), rng.randrange(size[1] - 20)
        draw.rectangle((x, y, x + 18, y + 12), fill=tuple(rng.randrange(256) for _ in range(3)))
    path.parent.mkdir(parents=True, exist_ok=True)
    image.save(path)


def write_json(path: Path, data: object, encoding: str = "utf-8") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1), encoding=encoding)


def make_release(root: Path) -> Path:
    """The benchmark described above under `root`; returns `root`."""
    for seed, (task, instances) in enumerate(INSTANCES.items()):
        folder = root / task
        for n, instance in enumerate(instances):
            picture(folder / "input_image" / "lv1" / f"{instance}.png", 10 * seed + n)
        for kind in ("video_gen_prompt", "image_gen_prompt"):
            path = folder / "prompt" / kind / f"{task}.txt"
            path.parent.mkdir(parents=True)
            path.write_text(f"Solve the {task} ({kind}).\n", encoding="utf-8")
        (folder / "judge_spec" / "_completeness_judge.txt").parent.mkdir()
        (folder / "judge_spec" / "_completeness_judge.txt").write_text("2 done, 1 partly, 0 not")
    maze = root / "maze_square"
    entries = [{"id": key, "rubric": rubric} for key, rubric in MAZE_RUBRICS.items()]
    entries[1]["answer"] = {"path": ["down", "right"]}
    entries.append("a stray string, skipped as the official reader skips it")
    write_json(maze / "judge_spec" / "_judge_rubric_maze_square.json", entries, "utf-8-sig")
    for n, instance in enumerate(INSTANCES["maze_square"]):
        picture(maze / "input_image" / "lv1" / f"{instance}_gt.png", 100 + n)
    clock = root / "clock_running"
    rubrics = {
        "clock_running_001": {"rubric": ["Run the clock an hour.", "Hands turn clockwise (001)."]},
        "default": {"rubric": ["Overall task: Let the clock run."]},
    }
    write_json(clock / "judge_spec" / "_judge_rubric_clock_running.json", rubrics)
    write_json(clock / "judge_spec" / "_gt_desc_clock_running.json", {"description": "An hour."})
    write_json(clock / "_raw" / "lv1" / "clock_running_lv1_001_gt_desc.json", "Ends at 4:00.")
    write_json(clock / "_raw" / "lv1" / "clock_running_lv1_002_gt_desc.json", {"end": [5, 0]})
    sorting = root / "sorting"
    task_wide = {"rubric": ["Sort the bars.", "Shortest left.", "Tallest right."], "answer": "ABC"}
    write_json(sorting / "judge_spec" / "_judge_rubric_sorting.json", task_wide)
    picture(sorting / "_raw" / "lv1" / "sorting_lv1_001_sim_gt.png", 200)
    return root


def break_release(root: Path) -> dict[str, str]:
    """Break a `make_release` copy four ways; returns {id: what the problem says}."""
    image = root / "maze_square" / "input_image" / "lv1" / "maze_square_lv1_001.png"
    image.write_bytes(image.read_bytes()[: image.stat().st_size // 2])  # truncated
    rubric = root / "clock_running" / "judge_spec" / "_judge_rubric_clock_running.json"
    write_json(rubric, {"clock_running_001": {"rubric": ["Run it.", "Clockwise."]}, "x": {}})
    write_json(root / "sorting" / "judge_spec" / "_judge_rubric_sorting.json", {"rubric": []})
    shutil.copytree(root / "sorting", root / "sorting.v2")
    for path in (root / "sorting.v2").rglob("sorting_*"):
        path.rename(path.with_name(path.name.replace("sorting", "sorting.v2")))
    return {
        "maze_square_lv1_001": "unreadable image",
        "clock_running_lv1_002": "no rubric entry",
        "sorting_lv1_001": "empty rubric",
        "sorting.v2_lv1_001": "task name has characters other than letters, digits and _",
    }


def write_videos(folder: Path, prefix: str | None = None) -> Path:
    """One 9-frame clip per instance in the official eval_res layout under `folder`."""
    clips = {i: clip(n, grey=40 * n + 30) for ids in INSTANCES.values() for n, i in enumerate(ids)}
    return videos.write_videos(folder, clips, prefix)
