"""The cost ledger: one record per submission to a video API, never rewritten.

Each submission is its own file, `<outdir>/ledger/<run>/<task>/<instance>/<time>.json`
(written atomically the moment the provider answers an operation id), so concurrent jobs
never share a file and a rerun that resumes an operation adds nothing. Its cost is the
price table's (`prices.video_seconds`, by provider model id, one price or prices by
resolution or size) times the seconds of video asked for.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING

from workflow_scripts.common.files import read_json, write_json
from workflow_scripts.video_api.providers import resolution_of, seconds_of

if TYPE_CHECKING:
    import pandas

LEDGER = "ledger"
# A record is the only trace of a paid submission: nothing writes it again.
RECORD_FIX = (
    "nothing writes a ledger record again: restore it by hand (its fields are "
    "video_api.ledger.record's), or delete it and the costs leave that submission out"
)
COLUMNS = [
    "provider", "model", "model_id", "operation", "task", "instance", "submitted_at",
    "seconds", "resolution", "price_per_second", "cost",
]  # fmt: skip


def price_per_second(model_id: str, resolution: str, prices: Mapping) -> float:
    """The price of one second of video of `model_id` at `resolution` (NaN: none)."""
    price = (prices.get("video_seconds") or {}).get(model_id)
    if isinstance(price, dict):
        price = price.get(resolution)
    return math.nan if price is None else float(price)


def record(outdir: str | Path, spec, run: str, task: str, instance: str, operation: str,
           prices: dict) -> dict:  # fmt: skip
    """Write the ledger's record of one submission; returns it."""
    provider, generation = spec.provider, spec.generation
    resolution, seconds = resolution_of(provider, generation), seconds_of(provider, generation)
    price = price_per_second(spec.model_id, resolution, prices)
    cost = price * seconds
    now = datetime.now(timezone.utc)
    entry = {
        "provider": provider,
        "model": run,
        "model_id": spec.model_id,
        "operation": operation,
        "task": task,
        "instance": instance,
        "submitted_at": now.isoformat(timespec="milliseconds"),
        "seconds": seconds,
        "resolution": resolution,
        "price_per_second": None if math.isnan(price) else price,
        "cost": None if math.isnan(cost) else round(cost, 6),
        "currency": prices.get("currency", "USD"),
    }
    name = now.strftime("%Y%m%dT%H%M%S%fZ") + ".json"
    write_json(Path(outdir) / LEDGER / run / task / instance / name, entry)
    return entry


def read_ledger(outdir: str | Path) -> pandas.DataFrame:
    """Every submission of the run under `outdir`, one row each (COLUMNS), oldest first."""
    import pandas as pd  # not for the jobs, which only write records

    rows = [
        read_json(path, RECORD_FIX, ["model", "operation", "cost"])
        for path in sorted((Path(outdir) / LEDGER).glob("*/*/*/*.json"))
    ]
    table = pd.DataFrame(rows, columns=COLUMNS)
    return table.sort_values("submitted_at", kind="stable").reset_index(drop=True)
