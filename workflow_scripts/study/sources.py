"""What making a model's videos costs, by how they are made (the registry's `source`).

One function per question, one branch per kind of source (`run.source`; `run.entry` is
the model's registry entry): a model the workflow runs on a GPU pays GPU-hours at
`prices.gpu_hour` (None: not priced); a video API model (`source: api`) pays per second of
video at `prices.video_seconds` (what it will pay: the price table; what it paid: the
cost ledger, one record per submission); a model whose videos were made elsewhere
(`source: videos`) has nothing to make.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import pandas as pd

from workflow_scripts.study.documents import Run
from workflow_scripts.video_api.ledger import cost_per_video

API = "api"


def _priced(cost: float) -> float | None:
    return None if math.isnan(cost) else cost


def video_price(run: Run, gpu_hours_per_video: float, prices: Mapping) -> float | None:
    """The price of one more video of `run` (None: not priced)."""
    if not run.generates:
        return 0.0
    if run.source == API:
        entry = run.entry
        return _priced(cost_per_video(entry["provider"], entry["model_id"],
                                      entry["generation"], prices))  # fmt: skip
    return None if prices.get("gpu_hour") is None else gpu_hours_per_video * prices["gpu_hour"]


def generation_spent(run: Run, gpu_hours: float, prices: Mapping, ledger: pd.DataFrame):
    """(submissions, cost) of the videos `run` made: a video API's from the cost `ledger`
    (its records of this run key; cost None where a record is not priced), else no
    submissions and the GPU-hours at `prices.gpu_hour` (None: not priced)."""
    if not run.generates:
        return 0, 0.0
    if run.source == API:
        mine = ledger[ledger["model"] == run.key]
        priced = mine["cost"].notna().all()
        return len(mine), float(mine["cost"].sum()) if priced else None
    return 0, None if prices.get("gpu_hour") is None else gpu_hours * prices["gpu_hour"]


def token_cost(model: str, input_tokens: float, output_tokens: float, prices: Mapping):
    """The price of tokens of VLM `model` at `prices.tokens` (per million; None: not priced)."""
    price = (prices.get("tokens") or {}).get(model)
    if price is None:
        return None
    return (input_tokens * price["input"] + output_tokens * price["output"]) / 1e6
