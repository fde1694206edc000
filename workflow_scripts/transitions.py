"""Transition labels (DESIGN, "Transition labels"): how the answer changes between checkpoints.

For each pair of decoded checkpoints (`transitions.pairs`, by default consecutive
`denoise.steps`) one VLM call sees the input image, the ground truth where there is one,
the task's goal and checklist and `frames_per_checkpoint` frames of each checkpoint
video, and returns one of `schemas.LABELS`. A human label (`transitions.human_labels`, a
CSV of model, instance, from, to, label) takes precedence; the VLM is still asked, so
both labels are kept and agreement can be measured. A pair's evidence and states are the
VLM's reading. A call that fails after the client's retries makes the document `error`
with a reason; the pair is listed only if a human labelled it.

Imports stay light, for the Snakefile's parsing and for each labelling job's start-up: the
VLM SDKs are imported only when labelling, pandas and the study only where used.
"""

from __future__ import annotations

import asyncio
import csv
import json
import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from vgi_models.video import checkpoint_name
from workflow_scripts.files import write_json
from workflow_scripts.jobs import job_log, run_vlm_calls, shell_job
from workflow_scripts.judge.frames import Frame, encode_image, sample_frames, video_duration
from workflow_scripts.judge.schemas import LABELS, TRANSITION
from workflow_scripts.judge.settings import Protocol

if TYPE_CHECKING:
    import pandas as pd

    from workflow_scripts.judge.client import VLMClient
    from workflow_scripts.study import Study

DEFAULTS = {"pairs": None, "frames_per_checkpoint": 4, "human_labels": None, "pool": None}
# Table 7's pooled models: the paper's four, else (a CPU run) their tiny counterparts.
PAPER_POOL = ("wan22_i2v_a14b", "vbvr_wan22", "hunyuan15_i2v", "ltx23_i2v")
TINY_POOL = ("tiny_wan22", "tiny_vbvr_wan22", "tiny_hunyuan15", "tiny_ltx23")
HUMAN_COLUMNS = ("model", "instance", "from", "to", "label")
PAIR_COLUMNS = (
    *("model", "task", "instance", "from", "to", "label", "source", "evidence"),
    *("earlier_state", "later_state", "vlm_label", "human_label"),
)

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

    def human_params(self, model: str, instance: str) -> str:
        """One video's human labels as JSON: editing a CSV row reruns only that video's job."""
        return json.dumps(self.human.get((model, instance), []))


def load_transitions(config: Mapping, study: Study) -> Transitions:
    """The config's `transitions` block checked against `study`; raises `StudyError`."""
    from workflow_scripts.study import StudyError

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


def uniform_frames(video: str | Path, count: int, long_side: int) -> list[Frame]:
    """`count` frames spread evenly from the first to the last (fewer if the clip is shorter)."""
    return sample_frames(video, (count - 1) / video_duration(video), long_side=long_side)


def _pair(a: int, b: int, reply: dict | None, human: str | None) -> dict:
    """A pair's entry: the human label if any, else the VLM's; both kept."""
    reading = reply or dict.fromkeys(("label", "earlier_state", "later_state", "evidence"))
    return {
        "from": a,
        "to": b,
        "label": human or reading["label"],
        "source": "human" if human else "vlm",
        "evidence": reading["evidence"],
        "earlier_state": reading["earlier_state"],
        "later_state": reading["later_state"],
        "vlm_label": reading["label"],
        "human_label": human,
    }


async def label_pairs(
    client: VLMClient,
    instance: Mapping,
    denoise: Path,
    pairs: Sequence[Pair],
    human: Sequence[Mapping],
    frames_per_checkpoint: int,
    protocol: Protocol,
    templates: Mapping[str, str],
) -> dict:
    """transitions.json of one video: one call per pair, run together (the client caps them).

    `instance` holds what `judge.settings.instance_params` gives, and the `image`
    and `gt_image` paths; `denoise` the checkpoint videos; `human` this video's human
    labels; `templates` the transition templates by file name. `calls` counts the calls
    sent (failed ones included), `cached_calls` the cache hits, `tokens` the usage of
    every reply (cached ones included), `model_version` the version the backend reported.
    """
    from workflow_scripts.judge import transition_prompts as prompts  # the VLM SDKs
    from workflow_scripts.judge.client import JudgeCallError, Request
    from workflow_scripts.judge.prompts import references

    size = protocol.image_long_side
    gt_image = instance.get("gt_image")
    refs = references(
        encode_image(instance["image"], size),
        gt_image and encode_image(gt_image, size),
        instance.get("gt_text"),
    )
    steps = sorted({step for pair in pairs for step in pair})
    frames = {
        step: uniform_frames(
            denoise / checkpoint_name(step, "x0"), frames_per_checkpoint, protocol.frame_long_side
        )
        for step in steps
    }
    counts, tokens, versions = Counter(calls=0, cached_calls=0), Counter(), set()
    system = templates["transition_system.txt"]

    async def ask(a: int, b: int) -> dict | JudgeCallError:
        parts = prompts.transition(templates, refs, (a, frames[a]), (b, frames[b]), instance)
        try:
            reply = await client.ask(Request("transition", parts, TRANSITION, system))
        except JudgeCallError as err:
            counts["calls"] += 1
            return err
        counts["cached_calls" if reply.cached else "calls"] += 1
        tokens.update(reply.usage)
        versions.update([reply.model_version] if reply.model_version else [])
        return reply.data

    replies = await asyncio.gather(*(ask(a, b) for a, b in pairs))
    human_of = {(h["from"], h["to"]): h["label"] for h in human}
    listed, errors = [], []
    for (a, b), reply in zip(pairs, replies, strict=True):
        if isinstance(reply, JudgeCallError):
            errors.append(f"pair {a}->{b}: {reply.reason}")
            reply = None
        if reply or (a, b) in human_of:
            listed.append(_pair(a, b, reply, human_of.get((a, b))))
    status = {"status": "error", "reason": "; ".join(errors)} if errors else {"status": "ok"}
    version = ", ".join(sorted(versions)) or None
    return {**status, "pairs": listed, **counts, "tokens": dict(tokens), "model_version": version}


def _documents(paths: Iterable[str | Path]):
    """(model, task, instance, path, document) of `<model>/<task>/<instance>/transitions.json`s."""
    for path in map(Path, paths):
        model, task, instance = path.parts[-4:-1]
        yield model, task, instance, path, json.loads(path.read_text(encoding="utf-8"))


def pairs_table(paths: Iterable[str | Path]) -> pd.DataFrame:
    """Every listed pair of the `transitions.json` files, one row each (PAIR_COLUMNS)."""
    import pandas as pd

    rows = [
        {"model": model, "task": task, "instance": instance, **pair}
        for model, task, instance, _, document in _documents(paths)
        for pair in document["pairs"]
    ]
    return pd.DataFrame(rows, columns=list(PAIR_COLUMNS))


def label_sheet(paths: Iterable[str | Path], pairs: Sequence[Pair]) -> pd.DataFrame:
    """The configured pairs of every video that no human has labelled, with an empty `label`."""
    import pandas as pd

    rows = []
    for model, task, instance, path, document in _documents(paths):
        listed = {(pair["from"], pair["to"]): pair for pair in document["pairs"]}
        for a, b in pairs:
            pair = listed.get((a, b), {})
            if pair.get("human_label") is None:
                videos = [str(path.parent / "denoise" / checkpoint_name(s, "x0")) for s in (a, b)]
                rows.append((model, instance, task, a, b, *videos, pair.get("vlm_label"), ""))
    columns = ["model", "instance", "task", "from", "to", "from_video", "to_video"]
    return pd.DataFrame(rows, columns=[*columns, "vlm_label", "label"])


def agreement(pairs: pd.DataFrame) -> tuple[pd.DataFrame, float]:
    """Human (rows) x VLM (columns) label counts and Cohen's kappa, over pairs with both.

    kappa = (p_o - p_e) / (1 - p_e), p_o the share of pairs on the diagonal and p_e the
    agreement expected by chance, sum_k (human share of k) x (VLM share of k); NaN when
    undefined (no pairs, or both sides give one and the same label throughout).
    """
    import pandas as pd

    both = pairs.dropna(subset=["human_label", "vlm_label"])
    matrix = pd.crosstab(both["human_label"], both["vlm_label"])
    matrix = matrix.reindex(index=list(LABELS), columns=list(LABELS), fill_value=0)
    matrix.index.name, matrix.columns.name = "human_label", "vlm_label"
    counts = matrix.to_numpy()
    n = counts.sum()
    expected = counts.sum(axis=1) @ counts.sum(axis=0) / n**2 if n else 1.0
    if expected == 1.0:
        return matrix, math.nan
    return matrix, float((np.trace(counts) / n - expected) / (1 - expected))


def label_transitions_job(argv: list[str]) -> None:
    """Rule `label_transitions`: label one video's checkpoint pairs; calls cached in `--cache`.

    A call whose reply stays unusable leaves transitions.json with status `error` (the job
    itself succeeds); a failure of the service fails the job, writing nothing.
    """
    names = ["denoise", "image", "output", "transitions", "judge", "instance", "human"]
    job = shell_job(argv, [*names, "client", "cache"], optional=["gt"])
    from workflow_scripts.judge.client import VLMClient

    settings = json.loads(job.transitions)
    instance = json.loads(job.instance)
    instance.update(image=job.image, gt_image=job.gt or None)
    judge = json.loads(job.judge)

    async def label() -> dict:
        async with VLMClient.from_config(json.loads(job.client), job.cache) as client:
            return await label_pairs(
                client,
                instance,
                Path(job.denoise),
                [tuple(pair) for pair in settings["pairs"]],
                json.loads(job.human),
                settings["frames_per_checkpoint"],
                Protocol(**judge["protocol"]),
                judge["prompts"],
            )

    document = run_vlm_calls(label)
    write_json(job.output, document)
    keys = ("status", "reason", "calls", "cached_calls")
    print(json.dumps({key: document[key] for key in keys if key in document}))


def export_label_sheet_job(smk) -> None:
    """Rule `export_label_sheet`: the pairs still to label by hand, as a CSV to fill in."""
    with job_log(smk):
        sheet = label_sheet(smk.input, [tuple(pair) for pair in smk.params.pairs])
        sheet.to_csv(smk.output[0], index=False)
        print(f"{len(sheet)} pairs to label")


def label_agreement_job(smk) -> None:
    """Rule `label_agreement`: the human x VLM confusion matrix and Cohen's kappa."""
    with job_log(smk):
        matrix, kappa = agreement(pairs_table(smk.input))
        matrix.to_csv(smk.output.matrix)
        summary = {"kappa": None if math.isnan(kappa) else kappa, "n": int(matrix.to_numpy().sum())}
        write_json(smk.output.kappa, summary)
        print(json.dumps(summary))
