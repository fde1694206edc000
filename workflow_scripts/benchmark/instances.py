"""Read and validate a VGI-Bench folder in the official layout into an instance table."""

from __future__ import annotations

import math
import os
import random
import re
import stat
from collections.abc import Iterable
from pathlib import Path

import pandas as pd
import yaml
from PIL import Image

from workflow_scripts.benchmark import rubric
from workflow_scripts.benchmark.image_check import ImageCheck

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg")
GT_KINDS = ("sim", "line", "render")  # _raw/lv<N>/<instance>_<kind>_gt.<suffix>, in this order
TASK_NAME = re.compile(r"[A-Za-z0-9_]+")  # what the workflow's `task` wildcard carries
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
    "image_prompt",
    "goal",
    "checklist",
    "tier_standard",
    "gt_image",
    "gt_text",
    "answer",
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


def _file(path: Path) -> Path | None:
    return path if path.is_file() else None


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


def _read_rubric(path: Path, problems: list[Problem]) -> dict[str, dict] | None:
    """The rubric file's entries by id, or None after recording why there are none."""
    if not path.is_file():
        problems.append(("missing rubric", path))
        return None
    try:
        return rubric.entries(rubric.read_json(path))
    except (OSError, ValueError) as err:
        problems.append((f"rubric is not readable JSON ({type(err).__name__})", path))
        return None


def _read_reference(paths: list[Path], problems: list[Problem]) -> str | None:
    """The reference text of the first existing ``_gt_desc`` file of ``paths``, if any."""
    path = next((p for p in paths if p.is_file()), None)
    if path is None:
        return None
    try:
        return rubric.as_text(rubric.read_json(path)) or None
    except (OSError, ValueError) as err:
        what = f"reference description is not readable JSON ({type(err).__name__})"
        problems.append((what, path))
        return None


def _image_size(
    path: Path, what: str, problems: list[Problem], check: ImageCheck
) -> tuple[int, int] | None:
    """The fully decoded image's (width, height), or None after recording why not (an
    image a model would not see as the file shows it: `vgi_models.input_image.refusal`)."""
    try:
        size, refused = check.size(path), check.refused(path)
    except (OSError, SyntaxError, Image.DecompressionBombError) as err:
        problems.append((f"unreadable {what} ({type(err).__name__})", path))
        return None
    if refused:
        problems.append((f"{what}: {refused}", path))
        return None
    return size


def _odd_entries(folder: Path, kind: str = "input image") -> list[Problem]:
    """Every entry of `folder` named like an image that is not a regular file one can read:
    a symbolic link to nothing, a folder, a FIFO, a socket or a device. Left unnamed, such an
    entry would drop its instance and change the seeded half drawn from the rest."""
    if not folder.is_dir():
        return []
    found = []
    for path in sorted(folder.iterdir()):
        if path.name.startswith(".") or path.suffix.lower() not in IMAGE_SUFFIXES:
            continue
        if what := odd_entry(path):
            found.append((f"{kind} is {what}", path))
    return found


def odd_entry(path: Path) -> str | None:
    """What `path` is where it is there but not a regular file (None: a regular file, or
    nothing at all)."""
    if path.is_file() or not (path.exists() or path.is_symlink()):
        return None
    if path.is_symlink() and not path.exists():
        return f"a symbolic link to {os.readlink(path)}, which does not exist"
    if path.is_dir():
        return "a folder, not an image file"
    if stat.S_ISFIFO(path.stat().st_mode):
        return "a FIFO (named pipe), not an image file"
    return "not a regular file (a socket or a device)"


def _find_instances(
    task: str, level: int, folder: Path, files: list[Path], problems: list[str]
) -> list[tuple[str, str, Path]]:
    """``(instance, id, image)`` for each well-named input image of one level (``files``
    of ``folder``); a ``<instance>_gt`` image is a reference, not an instance."""
    pattern = re.compile(re.escape(task) + r"_lv(\d+)_(.+)")
    found: dict[str, tuple[str, str, Path]] = {}
    for path in files:
        if path.suffix.lower() not in IMAGE_SUFFIXES or path.stem.endswith("_gt"):
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


def _gt_image(instance: str, inputs: dict[str, Path], raw: dict[str, Path]) -> Path | None:
    """The official reference image: ``input_image/lv<N>/<instance>_gt.*``, else
    ``_raw/lv<N>/<instance>_{sim,line,render}_gt.*``."""
    names = [f"{instance}_gt{s}" for s in IMAGE_SUFFIXES]
    found = [inputs.get(name) for name in names]
    found += [raw.get(f"{instance}_{kind}_gt{s}") for kind in GT_KINDS for s in IMAGE_SUFFIXES]
    return next((path for path in found if path), None)


def _load_task(
    task_dir: Path,
    task: str,
    levels: list[int],
    taxonomy: dict[str, tuple[str, tuple[str, ...]]],
    taxonomy_path: Path,
    groups: dict[str, str],
    check: ImageCheck,
    problems: list[str],
) -> list[dict]:
    """One row per instance of one task; problems go to ``problems``."""
    task_problems: list[Problem] = []
    if not TASK_NAME.fullmatch(task):
        what = "task name has characters other than letters, digits and _ (unusable in paths)"
        task_problems.append((what, task_dir))
    if task not in taxonomy:
        task_problems.append(("task not in the taxonomy", taxonomy_path))
    if not task_dir.is_dir():
        task_problems.append(("task folder not found", task_dir))
        problems.extend(f"{task}: {what} ({path})" for what, path in task_problems)
        return []

    instances = []  # (level, instance, id, image, reference image, reference description)
    for level in levels:
        folder = task_dir / "input_image" / f"lv{level}"
        files = _list_files(folder)
        inputs = {path.name: path for path in files}
        raw = {path.name: path for path in _list_files(task_dir / "_raw" / f"lv{level}")}
        odd = _odd_entries(folder) + _odd_entries(
            task_dir / "_raw" / f"lv{level}", "reference file"
        )
        problems.extend(f"{path.stem}: {what} ({path})" for what, path in odd)
        for instance, id_, image in _find_instances(task, level, folder, files, problems):
            gt_image, name = _gt_image(instance, inputs, raw), f"{instance}_gt_desc.json"
            desc = raw.get(name) or _file(task_dir / "_raw" / name)
            instances.append((level, instance, id_, image, gt_image, desc))

    spec = task_dir / "judge_spec"
    prompt_path = task_dir / "prompt" / "video_gen_prompt" / f"{task}.txt"
    prompt = _read_text(prompt_path, "prompt", task_problems)
    # the image branch's prompt: only tasks whose goal fits one image ship it
    image_prompt_path = task_dir / "prompt" / "image_gen_prompt" / f"{task}.txt"
    image_prompt = None
    if image_prompt_path.exists():
        image_prompt = _read_text(image_prompt_path, "image prompt", task_problems)
    rubric_path = spec / f"_judge_rubric_{task}.json"
    entries = _read_rubric(rubric_path, task_problems)
    standard = _read_text(spec / "_completeness_judge.txt", "tier standard", task_problems)
    desc_name = f"_gt_desc_{task}.json"
    task_desc = _read_reference([spec / desc_name, task_dir / desc_name], task_problems)
    subjects = [instance for _, instance, *_ in instances] or [task]
    problems.extend(f"{s}: {what} ({path})" for what, path in task_problems for s in subjects)

    check.warm(p for _, _, _, image, gt_image, _ in instances for p in (image, gt_image) if p)
    rows = []
    for level, instance, id_, image, gt_image, desc in instances:
        own: list[Problem] = []
        size = _image_size(image, "image", own, check)
        if size and (not size[1] or abs(size[0] / size[1] - ASPECT) > ASPECT_TOLERANCE):
            own.append((f"image is {size[0]}x{size[1]}, not 16:9", image))
        if gt_image:
            _image_size(gt_image, "reference image", own, check)
        own_desc = _read_reference([desc] if desc else [], own)
        entry = rubric.select(entries, task, level, id_) if entries is not None else None
        parsed = rubric.goal_and_checklist(entry, prompt) if entry is not None else None
        if entries is not None and entry is None:
            keys = ", ".join(rubric.lookup_keys(task, level, id_))
            own.append((f"no rubric entry (looked up {keys})", rubric_path))
        elif isinstance(parsed, str):
            own.append((parsed, rubric_path))
        problems.extend(f"{instance}: {what} ({path})" for what, path in own)
        if task_problems or own:
            continue
        domain, skills = taxonomy[task]
        goal, checklist = parsed
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
                "image_prompt": image_prompt,
                "goal": goal,
                "checklist": checklist,
                "tier_standard": standard,
                "gt_image": str(gt_image) if gt_image else None,
                "gt_text": "\n\n".join(t for t in (task_desc, own_desc) if t) or None,
                # the rubric entry's `answer`: the image judge's reference answer (Table 19);
                # the video judge sees it only where the entry has no rubric list (as its goal)
                "answer": rubric.as_text(entry["answer"]) if "answer" in entry else None,
            }
        )
    return rows


def load_instances(
    root: str | Path,
    taxonomy: str | Path,
    overlap: str | Path,
    tasks: str | Iterable[str] = "all",
    levels: Iterable[int] = (1, 2, 3),
    image_cache: str | Path | None = None,
) -> pd.DataFrame:
    """The validated instance table of a benchmark folder, indexed by instance id.

    ``tasks="all"`` takes every task folder under ``root``. Every image is decoded in
    full; ``image_cache`` remembers the ones that decode (`ImageCheck`). Raises one
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
    with ImageCheck(image_cache) as check:
        for task in names:
            rows += _load_task(
                root / task,
                task,
                sorted(set(levels)),
                task_map,
                Path(taxonomy),
                groups,
                check,
                problems,
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
