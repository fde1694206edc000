r"""Rubric files and reference texts in every shape the official VGI-Bench judge reads.

A rubric file is a list of ``{"id", "rubric": [str, ...], "answer"?}`` objects, an object
keyed by id with such values, or one task-wide ``{"rubric"?, "answer"?}``. An instance
takes the first entry under `lookup_keys`, else the file's only entry. Blank items are
dropped; ``rubric[0]`` is the goal (a leading "Overall task:" removed, as the official
judge matches it: ``overall\s*task\s*[:：-]+``), ``rubric[1:]`` the checklist; a one-item
rubric is its own single checklist item, its text as it is. An entry without a rubric
list (or only blank items) is a problem here: the official judge would show its `answer`
or the video prompt instead and score its rubric 0.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

OVERALL = re.compile(r"^\s*overall\s*task\s*[:：-]+\s*", re.IGNORECASE)


def read_json(path: Path) -> object:
    """The JSON in ``path`` (UTF-8, a BOM allowed); raises `OSError` or `ValueError`."""
    return json.loads(path.read_text(encoding="utf-8-sig"))


def entries(data: object) -> dict[str, dict]:
    """A rubric file's entries by id (``default`` for a task-wide object)."""
    if isinstance(data, list):
        return {str(e["id"]): e for e in data if isinstance(e, dict) and "id" in e}
    if not isinstance(data, dict):
        return {}
    if "rubric" in data or "answer" in data:
        return {"default": data}
    return {str(key): value for key, value in data.items() if isinstance(value, dict)}


def lookup_keys(task: str, level: int, id_: str) -> tuple[str, ...]:
    """The ids an instance's entry may have, first match wins."""
    instance = f"{task}_lv{level}_{id_}"
    return (instance, f"{task}_{id_}", f"{task}_default", "default", task, "rubric")


def select(found: dict[str, dict], task: str, level: int, id_: str) -> dict | None:
    """The instance's entry: the first of `lookup_keys`, else the only one, else None."""
    for key in lookup_keys(task, level, id_):
        if key in found:
            return found[key]
    return next(iter(found.values())) if len(found) == 1 else None


def goal_and_checklist(entry: dict) -> tuple[str, tuple[str, ...]] | str:
    """``(goal, checklist)`` of an entry, or what is wrong with its rubric."""
    rubric = entry.get("rubric") or []  # an entry with only an `answer` has none
    if not isinstance(rubric, list) or not all(isinstance(item, str) for item in rubric):
        return "rubric is not a list of strings"
    items = [item.strip() for item in rubric if item.strip()]
    if not items:
        return "empty rubric (no rubric list, or only blank items)"
    goal = OVERALL.sub("", items[0]) or items[0]
    return goal, tuple(items[1:]) or (items[0],)


def as_text(value: object) -> str:
    """A reference as the judge reads it: ``{"description": ...}``, a string, else compact JSON."""
    if isinstance(value, dict) and "description" in value:
        value = value["description"]
    if isinstance(value, str):
        return value.strip()
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
