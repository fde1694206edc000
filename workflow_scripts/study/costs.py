"""`tables/costs.csv`: what a run spent, per model and per stage that spent it.

One row per (model, judge): `generate` (the generate jobs' GPU-hours; for an API model,
video or image, its paid requests as `calls` and their cost from the one ledger of paid
requests, billed refusals, billed failures and unsure attempts included:
`prices.generation_spent`),
then each VLM stage (`main`, each variant of `judges:`, `labels` for the transition labels,
`checkpoints` for judge.checkpoints), summing the calls, cache hits and tokens its
documents record (`tally`) and pricing the tokens at the stage's VLM model's price
(`prices`). A run under another condition or seed is its own `model` (its run key). An
empty `cost`: not priced.
"""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from vgi_models.registry import API
from workflow_scripts.paid.ledger import COLUMNS as LEDGER_COLUMNS
from workflow_scripts.paid.ledger import read_ledger
from workflow_scripts.study.documents import GENERATE, Study
from workflow_scripts.study.prices import generation_spent, token_cost
from workflow_scripts.study.tally import Tally

COLUMNS = ["model", "judge", "gpu_hours", "calls", "cached_calls", "input_tokens",
           "output_tokens", "cost"]  # fmt: skip
SPENT = ("calls", "cached_calls", "input_tokens", "output_tokens")


def gpu_hours(run, count: Tally) -> float:
    """Hours of the run's generate jobs so far (a local pipeline's; else 0)."""
    return count.job_seconds(run.batch) / 3600 if run.on_gpu else 0.0


def study_ledger(study: Study) -> pd.DataFrame:
    """The ledger of the study's paid requests (none read without API runs)."""
    if any(run.kind == API for run in study.runs.values()):
        return read_ledger(study.outdir)
    return pd.DataFrame(columns=LEDGER_COLUMNS)


def run_costs(study: Study, run, count: Tally, prices: Mapping, ledger) -> list[dict]:
    """The costs rows of `run` from its counts `count` and its records in the `ledger`."""
    hours = gpu_hours(run, count)
    calls, cost = generation_spent(run, hours, prices, ledger, count.made)
    rows = [{"model": run.key, "judge": GENERATE, "gpu_hours": hours, "calls": calls,
             **dict.fromkeys(SPENT[1:], 0), "cost": cost}]  # fmt: skip
    for stage in study.stages(run):
        used = {key: count.stage(stage)[key] for key in SPENT}
        cost = token_cost(study.vlm_model(stage), used["input_tokens"],
                          used["output_tokens"], prices)  # fmt: skip
        rows.append({"model": run.key, "judge": stage, "gpu_hours": 0.0, **used, "cost": cost})
    return rows


def cost_rows(study: Study, prices: Mapping, tallies: dict[str, Tally], ledger) -> pd.DataFrame:
    """The costs table of the runs' counts (`tally.run_tallies`) and the cost `ledger`."""
    rows = [row for run in study.runs.values()
            for row in run_costs(study, run, tallies[run.key], prices, ledger)]  # fmt: skip
    table = pd.DataFrame(rows, columns=COLUMNS)
    table["gpu_hours"] = table["gpu_hours"].round(6)
    table["cost"] = pd.to_numeric(table["cost"]).round(6)
    return table
