"""The cost ledger's record of a video submission (`paid.ledger`: one ledger for every paid
request). Its cost is the price table's (`prices.video_seconds`, by provider model id, one
price or prices by resolution or size) times the seconds of video asked for.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path

from workflow_scripts.paid.ledger import (
    COLUMNS,
    LEDGER,
    RECORD_FIX,
    read_ledger,
    stamp,
    write_record,
)
from workflow_scripts.video_api.providers import resolution_of, seconds_of

__all__ = ["COLUMNS", "LEDGER", "RECORD_FIX", "price_per_second", "read_ledger", "record"]


def price_per_second(model_id: str, resolution: str, prices: Mapping) -> float:
    """The price of one second of video of `model_id` at `resolution` (NaN: none)."""
    price = (prices.get("video_seconds") or {}).get(model_id)
    if isinstance(price, dict):
        price = price.get(resolution)
    return math.nan if price is None else float(price)


def record(outdir: str | Path, spec, run: str, task: str, instance: str, operation: str | None,
           prices: dict, outcome: str = "billed", name: str | None = None) -> dict:  # fmt: skip
    """Write the ledger's record of one submission (`outcome`: billed, with its operation;
    unsure, with none; `name`: the record's file name, for one a rerun may write again);
    returns it."""
    provider, generation = spec.provider, spec.generation
    resolution, seconds = resolution_of(provider, generation), seconds_of(provider, generation)
    price = price_per_second(spec.model_id, resolution, prices)
    cost = price * seconds
    at, stamped = stamp()
    entry = {
        "provider": provider,
        "model": run,
        "model_id": spec.model_id,
        "operation": operation,
        "task": task,
        "instance": instance,
        "submitted_at": at,
        "seconds": seconds,
        "resolution": resolution,
        "price_per_second": None if math.isnan(price) else price,
        "cost": None if math.isnan(cost) else round(cost, 6),
        "currency": prices.get("currency", "USD"),
        "output": "video",
        "outcome": outcome,
    }
    return write_record(outdir, run, task, instance, name or stamped, entry)
