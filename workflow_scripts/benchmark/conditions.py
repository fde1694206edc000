"""Input conditions: the run's instances with other prompts, input images or judge specs.

A condition (config `conditions.<name>`) covers some of the run's selected instances
(`tasks`, `instances`; default: all of them) and may override, each read like the
release's and checked as strictly:

- `prompts`: a folder of `<instance>.txt` (an oracle prompt) or `<task>.txt`, the
  instance's file first;
- `images`: a root in the release's layout, `<root>/<task>/input_image/lv<N>/<instance>.png`;
- `judge_spec`: a root holding `<root>/<task>/judge_spec/` (`_judge_rubric_<task>.json`,
  `_completeness_judge.txt`, optional `_gt_desc_<task>.json`), in place of the release's.

Every problem is named `conditions.<name>: <instance or task>: <what> (<path>)`, all at
once, before any job.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pandas as pd

from workflow_scripts.benchmark import rubric
from workflow_scripts.benchmark.image_check import ImageCheck
from workflow_scripts.benchmark.instances import (
    ASPECT,
    ASPECT_TOLERANCE,
    IMAGE_SUFFIXES,
    _image_size,
    _read_reference,
    _read_rubric,
    _read_text,
    odd_entry,
)
from workflow_scripts.common.layout import condition_name_problem


def _covered(name: str, spec: Mapping, table: pd.DataFrame, problems: list[str]) -> pd.DataFrame:
    """The run's rows the condition covers; a task or instance outside the run is a problem."""
    where = f"conditions.{name}"
    tasks = spec.get("tasks", "all")
    if tasks != "all":
        tasks = [tasks] if isinstance(tasks, str) else list(tasks)
        for task in tasks:
            if task not in set(table["task"]):
                problems.append(f"{where}: {task}: not one of the run's tasks")
        table = table[table["task"].isin(tasks)]
    instances = spec.get("instances")
    if instances is not None:
        for instance in instances:
            if instance not in table.index:
                what = "not one of the run's selected instances (of the condition's tasks)"
                problems.append(f"{where}: {instance}: {what}")
        table = table[table.index.isin(instances)]
    if table.empty and not problems:
        problems.append(f"{where}: covers no instance of the run")
    return table.copy()


def _prompts(where: str, folder: Path, table: pd.DataFrame, problems: list[str]) -> None:
    if not folder.is_dir():
        problems.append(f"{where}: prompts: not a folder ({folder})")
        return
    for instance, row in table.iterrows():
        own, task = folder / f"{instance}.txt", folder / f"{row['task']}.txt"
        path = own if own.is_file() else task
        if not path.is_file():
            problems.append(f"{where}: {instance}: missing prompt ({own} or {task})")
            continue
        found: list = []
        text = _read_text(path, "prompt", found)
        problems.extend(f"{where}: {instance}: {what} ({p})" for what, p in found)
        table.loc[instance, "prompt"] = text


def _images(
    where: str, root: Path, table: pd.DataFrame, check: ImageCheck, problems: list[str]
) -> None:
    if not root.is_dir():
        problems.append(f"{where}: images: not a folder ({root})")
        return
    paths = {}
    for instance, row in table.iterrows():
        folder = root / row["task"] / "input_image" / f"lv{row['level']}"
        candidates = [folder / f"{instance}{suffix}" for suffix in IMAGE_SUFFIXES]
        path = next((p for p in candidates if p.is_file()), None)
        odd = [(p, what) for p in candidates if (what := odd_entry(p))]
        if odd:
            problems += [f"{where}: {instance}: image is {what} ({p})" for p, what in odd]
        elif path is None:
            problems.append(f"{where}: {instance}: missing image ({candidates[0]})")
        else:
            paths[instance] = path
    check.warm(paths.values())
    for instance, path in paths.items():
        found: list = []
        size = _image_size(path, "image", found, check)
        if size and (not size[1] or abs(size[0] / size[1] - ASPECT) > ASPECT_TOLERANCE):
            found.append((f"image is {size[0]}x{size[1]}, not 16:9", path))
        problems.extend(f"{where}: {instance}: {what} ({p})" for what, p in found)
        table.loc[instance, "image"] = str(path)


def _judge_spec(where: str, root: Path, table: pd.DataFrame, problems: list[str]) -> None:
    if not root.is_dir():
        problems.append(f"{where}: judge_spec: not a folder ({root})")
        return
    for task, rows in table.groupby("task", sort=False):
        spec, task_problems = root / task / "judge_spec", []
        rubric_path = spec / f"_judge_rubric_{task}.json"
        entries = _read_rubric(rubric_path, task_problems)
        standard = _read_text(spec / "_completeness_judge.txt", "tier standard", task_problems)
        desc = _read_reference([spec / f"_gt_desc_{task}.json"], task_problems)
        for instance, row in rows.iterrows():
            own = [f"{what} ({path})" for what, path in task_problems]
            level, id_ = row["level"], row["id"]
            entry = None if entries is None else rubric.select(entries, task, level, id_)
            parsed = None if entry is None else rubric.goal_and_checklist(entry)
            if entries is not None and entry is None:
                keys = ", ".join(rubric.lookup_keys(task, level, id_))
                own.append(f"no rubric entry (looked up {keys}) ({rubric_path})")
            elif isinstance(parsed, str):
                own.append(f"{parsed} ({rubric_path})")
            problems.extend(f"{where}: {instance}: {what}" for what in own)
            if own:
                continue
            answer = entry.get("answer")
            answer = answer is not None and f"Reference answer: {rubric.as_text(answer)}"
            table.at[instance, "goal"], table.at[instance, "checklist"] = parsed
            table.loc[instance, "tier_standard"] = standard
            table.at[instance, "gt_text"] = "\n\n".join(t for t in (desc, answer) if t) or None


def load_conditions(
    conditions: Mapping[str, Mapping], table: pd.DataFrame, check: ImageCheck
) -> tuple[dict[str, pd.DataFrame], list[str]]:
    """Each condition's instance table (the run's rows it covers, its overrides applied)
    and every problem found in them."""
    tables, problems = {}, []
    for name, spec in conditions.items():
        spec = spec or {}
        if why := condition_name_problem(name):
            problems.append(f"conditions.{name}: {why}")
            continue
        where, found = f"conditions.{name}", []
        rows = _covered(name, spec, table, found)
        if spec.get("prompts"):
            _prompts(where, Path(spec["prompts"]), rows, found)
        if spec.get("images"):
            _images(where, Path(spec["images"]), rows, check, found)
        if spec.get("judge_spec"):
            _judge_spec(where, Path(spec["judge_spec"]), rows, found)
        problems += found
        tables[name] = rows
    return tables, problems
