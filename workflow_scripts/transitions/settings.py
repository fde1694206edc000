"""The transition labels' settings (DESIGN, "Transition labels"): the checkpoint pairs to
label, the human labels that take precedence, and the models pooled in Table 7.

`transitions.human_labels` is a CSV of model, instance, from, to, label; every problem
in it is reported with its line before any job.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from workflow_scripts.transitions.labels import LABELS

if TYPE_CHECKING:
    from workflow_scripts.benchmark.study import Study

DEFAULTS = {"pairs": None, "frames_per_checkpoint": 4, "human_labels": None, "pool": None}
# Table 7's pooled models: the paper's four, else (a CPU run) their tiny counterparts.
PAPER_POOL = ("wan22_i2v_a14b", "vbvr_wan22", "hunyuan15_i2v", "ltx23_i2v")
TINY_POOL = ("tiny_wan22", "tiny_vbvr_wan22", "tiny_hunyuan15", "tiny_ltx23")
HUMAN_COLUMNS = ("model", "instance", "from", "to", "label")

Pair = tuple[int, int]


@dataclass(frozen=True)
class Transitions:
    """The checkpoint pairs to label, the human labels by (model, instance) and the models
    pooled in Table 7's `all` rows."""

    pairs: tuple[Pair, ...]
    frames_per_checkpoint: int
    human: Mapping[tuple[str, str], list[dict]]
    pool: tuple[str, ...]

    def params(self) -> str:
        """The settings that determine every video's labels, as JSON."""
        settings = {"pairs": self.pairs, "frames_per_checkpoint": self.frames_per_checkpoint}
        return json.dumps(settings)

    def human_params(self, model: str, instances: Sequence[str]) -> str:
        """The human labels of `instances` (one task's) by instance, as JSON: editing a CSV
        row reruns only its (model, task)'s job."""
        labels = {i: self.human[(model, i)] for i in instances if (model, i) in self.human}
        return json.dumps(labels)


def load_transitions(config: Mapping, study: Study) -> Transitions:
    """The config's `transitions` block checked against `study`; raises `StudyError`."""
    from workflow_scripts.benchmark.study import StudyError

    settings = {**DEFAULTS, **(config.get("transitions") or {})}
    steps = list(study.steps)
    if settings["pairs"] is None:
        pairs = list(zip(steps, steps[1:], strict=False))
    else:
        pairs = [(int(a), int(b)) for a, b in settings["pairs"]]
    problems = []
    for a, b in pairs:
        if missing := [step for step in (a, b) if step not in steps]:
            problems.append(f"transitions.pairs: {a}->{b}: step {missing[0]} not in {steps}")
        elif a >= b:
            problems.append(f"transitions.pairs: {a}->{b}: the earlier step must come first")
    if len(set(pairs)) < len(pairs):
        problems.append("transitions.pairs: a pair is listed twice")
    path = settings["human_labels"]
    human = _read_human(path, study, pairs, problems) if path else {}
    pool = _pool(settings["pool"], list(study.models), problems)
    if problems:
        raise StudyError(problems)
    return Transitions(tuple(pairs), settings["frames_per_checkpoint"], human, pool)


def _pool(pool: Sequence[str] | None, models: Sequence[str], problems: list[str]):
    """`transitions.pool` checked against the run's models; None: the paper's four models
    of the run, or where it has none of them, their tiny counterparts in it."""
    if pool is None:
        paper = [model for model in PAPER_POOL if model in models]
        return tuple(paper or [model for model in TINY_POOL if model in models])
    for model in pool:
        if model not in models:
            problems.append(f"transitions.pool: {model!r} is not among models {list(models)}")
    return tuple(pool)


def _read_human(path: str, study: Study, pairs: Sequence[Pair], problems: list[str]) -> dict:
    """Human labels by (model, instance), sorted by pair; rows with no label are skipped."""
    where = f"transitions.human_labels: {path}"
    try:
        with open(path, newline="", encoding="utf-8") as handle:
            reader = csv.DictReader(handle)
            rows = [(reader.line_num, row) for row in reader]
            columns = reader.fieldnames or []
    except OSError as err:
        problems.append(f"{where}: cannot read it ({err.strerror})")
        return {}
    if missing := [column for column in HUMAN_COLUMNS if column not in columns]:
        problems.append(f"{where}: missing column(s) {', '.join(missing)}")
        return {}
    human: dict[tuple[str, str], list[dict]] = {}
    first_line: dict[tuple, int] = {}
    for line, row in rows:
        row = {key: (row[key] or "").strip() for key in HUMAN_COLUMNS}
        if not row["label"]:
            continue
        try:
            pair = (int(row["from"]), int(row["to"]))
        except ValueError:
            pair = (row["from"], row["to"])
        found = _row_problems(row, pair, study, pairs)
        key = (row["model"], row["instance"], pair)
        if key in first_line:
            found.append(f"labels this pair again (first on line {first_line[key]})")
        first_line.setdefault(key, line)
        problems += [f"{where} line {line}: {problem}" for problem in found]
        if not found:
            label = {"from": pair[0], "to": pair[1], "label": row["label"]}
            human.setdefault((row["model"], row["instance"]), []).append(label)
    for labels in human.values():
        labels.sort(key=lambda h: (h["from"], h["to"]))
    return human


def _row_problems(row: Mapping[str, str], pair: tuple, study: Study, pairs: Sequence[Pair]):
    """What is wrong with one labelled row of the human labels CSV, as a list."""
    found = []
    if row["model"] not in study.models:
        found.append(f"unknown model {row['model']!r} (this run's: {', '.join(study.models)})")
    if row["instance"] not in study.instances.index:
        found.append(f"unknown instance {row['instance']!r} (not among the selected ones)")
    if pair not in pairs:
        known = ", ".join(f"{a}->{b}" for a, b in pairs)
        found.append(f"unknown pair {pair[0]}->{pair[1]} (transitions.pairs: {known})")
    if row["label"] not in LABELS:
        found.append(f"unknown label {row['label']!r} (expected one of {', '.join(LABELS)})")
    return found
