r"""Rubric files and reference texts in every shape the official VGI-Bench judge reads.

A rubric file is a list of ``{"id", "rubric": [str, ...], "answer"?}`` objects, an object
keyed by id with such values, or one task-wide ``{"rubric"?, "answer"?}``. An instance
takes the first entry under `lookup_keys`, else the file's only entry. Blank items are
dropped; ``rubric[0]`` is the goal (a leading "Overall task:" removed, as the official
judge matches it: ``overall\s*task\s*[:：-]+``), ``rubric[1:]`` the checklist; a one-item
rubric is its own single checklist item, its text as it is. An entry without a
``rubric`` key falls back to its `answer`, else the video prompt, with no checklist (the
official judge then scores the rubric 0); a ``rubric`` that is empty, only blank, or not
a list of strings is a problem here (the official judge would score it 0 too).
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


def goal_and_checklist(entry: dict, prompt: str | None = None) -> tuple[str, tuple[str, ...]] | str:
    """``(goal, checklist)`` of an entry, or what is wrong with its rubric.

    An entry without a ``rubric`` key falls back as the official judge's does: its goal is
    ``Reference answer: ...`` (where it has an `answer`), else the video prompt, and its
    checklist is empty (the judge then scores its rubric 0).
    """
    if "rubric" not in entry:
        if "answer" in entry:
            return f"Reference answer: {as_text(entry['answer'])}", ()
        if prompt:
            return f"Video prompt: {prompt}", ()
    rubric = entry.get("rubric")
    if not isinstance(rubric, list) or not all(isinstance(item, str) for item in rubric):
        return "rubric is not a list of strings"
    items = [item.strip() for item in rubric if item.strip()]
    if not items:
        return "empty rubric (only blank items)"
    goal = OVERALL.sub("", items[0]) or items[0]
    return goal, tuple(items[1:]) or (items[0],)


def as_text(value: object) -> str:
    """A reference as the judge reads it: ``{"description": ...}``, a string, else compact JSON."""
    if isinstance(value, dict) and "description" in value:
        value = value["description"]
    if isinstance(value, str):
        return value.strip()
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
