"""The tidy per-instance results of a run, read from its score.json and transitions.json.

Documents are where ``common.layout`` puts them. Every selected (model, instance) gets
a row: ``status`` is ``ok`` or ``error`` as the judge wrote it,
``missing`` where score.json does not exist; the scores of a row that is not ``ok`` are
left empty (never 0). ``transitions_status`` does the same for transitions.json.
``judge_model_version`` is the version the judge's replies reported (each row: its
score.json's; each pair: its transitions.json's; ``judge.drift``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

import pandas as pd

from workflow_scripts.benchmark.instances import load_overlap, load_taxonomy
from workflow_scripts.common import layout
from workflow_scripts.common.files import read_csv, read_json
from workflow_scripts.common.layout import SELECTED_FIX

INFO = ("task", "level", "domain", "skills", "overlap_group")
SCORES = ("completeness", "rubric", "final", "strict_success", "tier")
PAIR_COLUMNS = ("from", "to", "label", "source")
VERSION = "judge_model_version"


def instance_table(selected: str | Path, taxonomy: str | Path, overlap: str | Path) -> pd.DataFrame:
    """selected.csv joined with each task's domain, skill tags and overlap group."""
    table = read_csv(selected, SELECTED_FIX, ["instance", "task"], dtype={"id": str})
    table = table.set_index("instance")
    tasks, groups = load_taxonomy(taxonomy), load_overlap(overlap)
    table["domain"] = [tasks[task][0] for task in table["task"]]
    table["skills"] = [tasks[task][1] for task in table["task"]]
    table["overlap_group"] = [groups.get(task, "unassigned") for task in table["task"]]
    return table


def _read(path: Path) -> dict | None:
    return read_json(path, layout.stage_fix(path), ["status"], optional=True)


def collect(
    instances: pd.DataFrame,
    models: Iterable[str],
    outdir: str | Path,
    transitions: bool = True,
    no_checkpoints: Iterable[str] = (),
    runs: Mapping[str, Mapping] | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The per-instance results and the long table of transition labels of a run.

    ``instances`` is indexed by instance with columns task, level, domain, skills and
    overlap_group. With ``transitions=False`` no transitions.json is read (every
    ``transitions_status`` is ``missing``); a model of ``no_checkpoints`` (videos made
    elsewhere) has none to read (``none``). Every pair a transitions.json lists is taken
    with its document's status (``transitions_status``): a pair whose call failed is not
    listed.

    ``runs`` (default: each model's main run over every instance) maps each run key
    (``layout.run_key``) to its ``model``, ``condition``, ``seed`` and, for a condition,
    the ``instances`` it covers; each row and pair says its run's ``condition`` and
    ``seed`` (None: the registry's), ``model`` being the model's key.
    """
    no_checkpoints = set(no_checkpoints)
    if runs is None:
        runs = {model: {"model": model, "condition": layout.DEFAULT_CONDITION} for model in models}
    rows, pairs = [], []
    for key, run in runs.items():
        model, covered = run["model"], run.get("instances")
        own = instances if covered is None else instances.loc[list(covered)]
        condition = run.get("condition", layout.DEFAULT_CONDITION)
        extra = {"condition": condition, "seed": run.get("seed")}
        for instance, info in own.iterrows():
            where = (outdir, key, info["task"], str(instance))
            score = _read(layout.score_file(*where)) or {"status": "missing"}
            labels = (_read(layout.transitions_file(*where)) if transitions else None) or {}
            ok, keys = score["status"] == "ok", {"model": model, "instance": instance}
            rows.append(
                {
                    **keys,
                    **{key: info[key] for key in INFO},
                    "status": score["status"],
                    "reason": score.get("reason"),
                    VERSION: score.get("model_version"),
                    **{key: score.get(key) if ok else None for key in SCORES},
                    "transitions_status": "none"
                    if model in no_checkpoints
                    else labels.get("status", "missing"),
                    **extra,
                }
            )
            pairs += [
                {
                    **keys,
                    "task": info["task"],
                    "domain": info["domain"],
                    **{key: pair.get(key) for key in PAIR_COLUMNS},
                    "step_pair": f"{pair['from']}→{pair['to']}",
                    "transitions_status": labels["status"],
                    VERSION: labels.get("model_version"),
                    **extra,
                }
                for pair in labels.get("pairs", [])
            ]
    results = pd.DataFrame(rows)
    numeric = ["completeness", "rubric", "final", "tier"]
    results[numeric] = results[numeric].astype(float)
    results["strict_success"] = results["strict_success"].astype("boolean")
    columns = ["model", "instance", "task", "domain", "from", "to", "step_pair", "label", "source"]
    columns += ["transitions_status", VERSION, "condition", "seed"]
    return results, pd.DataFrame(pairs, columns=columns)
