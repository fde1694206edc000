"""`tables/costs.csv`: what a run spent, per model and per stage that spent it.

One row per (model, judge): `generate` (the generate jobs' GPU-hours; for a video API
model its submissions as `calls` and its cost from the ledger: `sources.generation_spent`),
then each VLM stage (`main`, each variant of `judges:`, `labels` for the transition labels,
`checkpoints` for judge.checkpoints), summing the calls, cache hits and tokens its
documents record (`documents.spent`) and pricing the tokens at the stage's VLM model's
price. A run under another condition or seed is its own `model` (its run key). An empty
`cost`: not priced.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pandas as pd

from workflow_scripts.study.documents import GENERATE, Documents, Study, generation_seconds, spent
from workflow_scripts.study.sources import generation_spent, token_cost
from workflow_scripts.video_api.ledger import read_ledger

COLUMNS = ["model", "judge", "gpu_hours", "calls", "cached_calls", "input_tokens",
           "output_tokens", "cost"]  # fmt: skip


def gpu_hours(study: Study, run, docs: Documents) -> tuple[float, int]:
    """(hours of the run's generate jobs so far, videos made)."""
    if not run.denoises:
        return 0.0, 0
    metas = [docs.read(study.generation(run, instance)) for instance in run.instances]
    metas = [meta for meta in metas if meta]
    return sum(map(generation_seconds, metas)) / 3600, len(metas)


def stage_spent(study: Study, stage: str, run, docs: Documents) -> dict:
    """calls, cached_calls and tokens a run's documents of `stage` record, and how many."""
    total = dict.fromkeys(("calls", "cached_calls", "input_tokens", "output_tokens", "n"), 0)
    for instance in run.instances:
        document = docs.read(study.document(stage, run, instance))
        if document:
            total["n"] += 1
            for key, value in spent(document).items():
                total[key] += value
    return total


def cost_rows(study: Study, prices: Mapping, docs: Documents | None = None) -> pd.DataFrame:
    """The costs table of the study's documents as they stand."""
    docs = docs or Documents()
    ledger = read_ledger(study.outdir)
    rows = []
    for run in study.runs.values():
        hours, _ = gpu_hours(study, run, docs)
        zero = dict.fromkeys(("cached_calls", "input_tokens", "output_tokens"), 0)
        calls, cost = generation_spent(run, hours, prices, ledger)
        rows.append({"model": run.key, "judge": GENERATE, "gpu_hours": hours, "calls": calls,
                     **zero, "cost": cost})  # fmt: skip
        for stage in study.stages(run):
            used = stage_spent(study, stage, run, docs)
            used.pop("n")
            cost = token_cost(study.vlm_model(stage), used["input_tokens"],
                              used["output_tokens"], prices)  # fmt: skip
            rows.append({"model": run.key, "judge": stage, "gpu_hours": 0.0, **used, "cost": cost})
    table = pd.DataFrame(rows, columns=COLUMNS)
    table["gpu_hours"] = table["gpu_hours"].round(6)
    table["cost"] = pd.to_numeric(table["cost"]).round(6)
    return table


def write_costs(study: Study, prices: Mapping, docs: Documents | None = None) -> Path:
    """Write `<outdir>/tables/costs.csv`; returns its path."""
    path = Path(study.outdir) / "tables" / "costs.csv"
    path.parent.mkdir(parents=True, exist_ok=True)
    cost_rows(study, prices, docs).to_csv(path, index=False)
    return path
