"""Read and validate a VGI-Bench folder in the official layout into an instance table."""

from __future__ import annotations

import json
import math
import random
import re
from collections.abc import Iterable
from pathlib import Path

import pandas as pd
import yaml
from PIL import Image

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg")
OVERLAP_GROUPS = ("overlap", "semi_overlap", "non_overlap", "unassigned")
ASPECT = 16 / 9
ASPECT_TOLERANCE = 0.01 * ASPECT
COLUMNS = (
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
)

# A problem before it is attributed to instances: (what, path).
Problem = tuple[str, Path]


class BenchmarkError(ValueError):
    """Every problem found in a benchmark folder, one ``"<id or task>: <what> (<path>)"`` each."""

    def __init__(self, root: str | Path, problems: list[str]) -> None:
        super().__init__(str(root), problems)
        self.root = str(root)
        self.problems = problems

    def __str__(self) -> str:
        header = f"{self.root}: {len(self.problems)} problem(s) in the benchmark:"
        return "\n".join([header, *(f"  - {p}" for p in self.problems)])


def _read_yaml(path: str | Path) -> object:
    with open(path, encoding="utf-8") as f:
        return yaml.safe_load(f)


def _is_str_list(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def load_taxonomy(path: str | Path) -> dict[str, tuple[str, tuple[str, ...]]]:
    """Read ``{domain: {task: [skill, ...]}}`` into ``{task: (domain, skills)}``."""
    data = _read_yaml(path)
    if not isinstance(data, dict) or not all(isinstance(t, dict) for t in data.values()):
        raise ValueError(f"{path}: expected {{domain: {{task: [skill, ...]}}}}")
    taxonomy: dict[str, tuple[str, tuple[str, ...]]] = {}
    for domain, tasks in data.items():
        for task, skills in tasks.items():
            if not isinstance(task, str) or not _is_str_list(skills or []):
                raise ValueError(f"{path}: task {task!r} needs a name and a list of skill tags")
            if task in taxonomy:
                raise ValueError(f"{path}: task {task!r} is listed under two domains")
            taxonomy[task] = (str(domain), tuple(skills or ()))
    return taxonomy


def load_overlap(path: str | Path) -> dict[str, str]:
    """Read ``{group: [task, ...]}`` into ``{task: group}``."""
    data = _read_yaml(path) or {}
    if not isinstance(data, dict) or not set(data) <= set(OVERLAP_GROUPS):
        raise ValueError(f"{path}: expected {{group: [task, ...]}} with groups {OVERLAP_GROUPS}")
    groups: dict[str, str] = {}
    for group, tasks in data.items():
        if not _is_str_list(tasks or []):
            raise ValueError(f"{path}: group {group!r} must be a list of task names")
        for task in tasks or ():
            if task in groups:
                raise ValueError(f"{path}: task {task!r} is in two groups")
            groups[task] = group
    return groups


def _list_files(folder: Path) -> list[Path]:
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if p.is_file() and not p.name.startswith("."))


def _read_text(path: Path, what: str, problems: list[Problem]) -> str | None:
    """The stripped UTF-8 text of ``path``, or None after recording why not."""
    if not path.is_file():
        problems.append((f"missing {what}", path))
        return None
    try:
        text = path.read_text(encoding="utf-8-sig").strip()
    except UnicodeDecodeError:
        problems.append((f"{what} is not UTF-8 text", path))
        return None
    except OSError as err:
        problems.append((f"unreadable {what} ({type(err).__name__})", path))
        return None
    if not text:
        problems.append((f"empty {what}", path))
        return None
    return text


def _read_rubric(path: Path, problems: list[Problem]) -> tuple[str, tuple[str, ...]] | None:
    """The rubric's ``(goal, checklist)``, or None after recording why not."""
    text = _read_text(path, "rubric", problems)
    if text is None:
        return None
    try:
        items = json.loads(text)
    except json.JSONDecodeError:
        items = None
    if not _is_str_list(items):
        problems.append(("rubric is not a JSON list of strings", path))
        return None
    items = [item.strip() for item in items]
    if len(items) < 2 or not all(items):
        problems.append(("empty checklist (need a goal and non-blank items)", path))
        return None
    return items[0], tuple(items[1:])


def _image_size(path: Path, what: str, problems: list[Problem]) -> tuple[int, int] | None:
    """The image's (width, height) from its header, or None after recording why not."""
    try:
        with Image.open(path) as image:
            return image.size
    except (OSError, Image.DecompressionBombError) as err:
        problems.append((f"unreadable {what} ({type(err).__name__})", path))
        return None


def _find_instances(
    task_dir: Path, task: str, level: int, problems: list[str]
) -> list[tuple[str, str, Path]]:
    """``(instance, id, image)`` for each well-named input image of one level."""
    folder = task_dir / "input_image" / f"lv{level}"
    pattern = re.compile(re.escape(task) + r"_lv(\d+)_(.+)")
    found: dict[str, tuple[str, str, Path]] = {}
    for path in _list_files(folder):
        if path.suffix.lower() not in IMAGE_SUFFIXES:
            continue
        match = pattern.fullmatch(path.stem)
        if match is None:
            problems.append(f"{path.stem}: image name is not {task}_lv<N>_<id> ({path})")
        elif match[1] != str(level):
            what = f"name says lv{match[1]} but the image is in lv{level}"
            problems.append(f"{path.stem}: {what} ({path})")
        elif path.stem in found:
            other = found[path.stem][2]
            problems.append(f"{path.stem}: duplicate instance id, also {other.name} ({path})")
        else:
            found[path.stem] = (path.stem, match[2], path)
    if not found:
        problems.append(f"{task}: no input images for level {level} ({folder})")
    return list(found.values())


def _load_task(
    task_dir: Path,
    task: str,
    levels: list[int],
    taxonomy: dict[str, tuple[str, tuple[str, ...]]],
    taxonomy_path: Path,
    groups: dict[str, str],
    problems: list[str],
) -> list[dict]:
    """One row per instance of one task; problems go to ``problems``."""
    task_problems: list[Problem] = []
    if task not in taxonomy:
        task_problems.append(("task not in the taxonomy", taxonomy_path))
    if not task_dir.is_dir():
        task_problems.append(("task folder not found", task_dir))
        problems.extend(f"{task}: {what} ({path})" for what, path in task_problems)
        return []

    instances = []  # (level, instance, id, image, gt files by stem)
    for level in levels:
        gt_files: dict[str, list[Path]] = {}
        for path in _list_files(task_dir / "gt" / f"lv{level}"):
            gt_files.setdefault(path.stem, []).append(path)
        for instance, id_, image in _find_instances(task_dir, task, level, problems):
            instances.append((level, instance, id_, image, gt_files.get(instance, [])))

    spec = task_dir / "judge_spec"
    prompt_path = task_dir / "prompt" / "video_gen_prompt" / f"{task}.txt"
    prompt = _read_text(prompt_path, "prompt", task_problems)
    rubric = _read_rubric(spec / f"_judge_rubric_{task}.json", task_problems)
    standard = _read_text(spec / "_completeness_judge.txt", "tier standard", task_problems)
    subjects = [instance for _, instance, *_ in instances] or [task]
    problems.extend(f"{s}: {what} ({path})" for what, path in task_problems for s in subjects)

    rows = []
    for level, instance, id_, image, gt in instances:
        own: list[Problem] = []
        size = _image_size(image, "image", own)
        if size and (not size[1] or abs(size[0] / size[1] - ASPECT) > ASPECT_TOLERANCE):
            own.append((f"image is {size[0]}x{size[1]}, not 16:9", image))
        gt_images = [p for p in gt if p.suffix.lower() in IMAGE_SUFFIXES]
        if gt_images:
            _image_size(gt_images[0], "reference image", own)
        if len(gt_images) > 1:
            own.append((f"duplicate reference image, also {gt_images[0].name}", gt_images[1]))
        gt_text_path = next((p for p in gt if p.suffix.lower() == ".txt"), None)
        gt_text = gt_text_path and _read_text(gt_text_path, "reference text", own)
        problems.extend(f"{instance}: {what} ({path})" for what, path in own)
        if task_problems or own:
            continue
        domain, skills = taxonomy[task]
        goal, checklist = rubric
        rows.append(
            {
                "instance": instance,
                "task": task,
                "level": level,
                "id": id_,
                "domain": domain,
                "skills": skills,
                "overlap_group": groups.get(task, "unassigned"),
                "image": str(image),
                "prompt": prompt,
                "goal": goal,
                "checklist": checklist,
                "tier_standard": standard,
                "gt_image": str(gt_images[0]) if gt_images else None,
                "gt_text": gt_text,
            }
        )
    return rows


def load_instances(
    root: str | Path,
    taxonomy: str | Path,
    overlap: str | Path,
    tasks: str | Iterable[str] = "all",
    levels: Iterable[int] = (1, 2, 3),
) -> pd.DataFrame:
    """The validated instance table of a benchmark folder, indexed by instance id.

    ``tasks="all"`` takes every task folder under ``root``. Raises one
    :class:`BenchmarkError` listing every problem found.
    """
    root = Path(root)
    task_map = load_taxonomy(taxonomy)
    groups = load_overlap(overlap)
    if not root.is_dir():
        raise BenchmarkError(root, [f"benchmark: root is not a folder ({root})"])
    if tasks == "all":
        names = sorted(p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))
    else:
        names = sorted(set([tasks] if isinstance(tasks, str) else tasks))
    problems: list[str] = []
    if not names:
        problems.append(f"benchmark: no tasks to read ({root})")
    rows = []
    for task in names:
        rows += _load_task(
            root / task, task, sorted(set(levels)), task_map, Path(taxonomy), groups, problems
        )
    if problems:
        raise BenchmarkError(root, problems)
    index = pd.Index([row.pop("instance") for row in rows], name="instance")
    table = pd.DataFrame(rows, index=index, columns=list(COLUMNS), dtype=object)
    return table.astype({"level": int}).sort_values(["task", "level", "id"])


def select_subset(table: pd.DataFrame, subset: str, seed: int) -> pd.DataFrame:
    """``full``: every row; ``half``: ``ceil(n / 2)`` seeded ids per (task, level)."""
    if subset == "full":
        return table
    if subset != "half":
        raise ValueError(f"unknown subset {subset!r}: expected 'half' or 'full'")
    keep: list[str] = []
    for (task, level), group in table.groupby(["task", "level"]):
        ids = sorted(group["id"])
        chosen = set(random.Random(f"{seed}/{task}/lv{level}").sample(ids, math.ceil(len(ids) / 2)))
        keep.extend(group.index[group["id"].isin(chosen)])
    return table[table.index.isin(keep)]
