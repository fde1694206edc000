"""The cost ledger: one record per paid request of either API branch, never rewritten.

Each paid request is its own file, `<outdir>/ledger/<run>/<task>/<instance>/<name>.json`
(written atomically when its answer came, or when a job learns that it may have been
taken), so concurrent jobs never share a file and a rerun that resumes an operation or takes
a kept reply adds nothing. A record says what was asked (`output`: video or image), what
came of it (`outcome`) and its `cost` at the price table's price:

- `billed`: an operation id for a video, an image for an image;
- `refused`: an image the service refused (a billed answer);
- `failed`: an image reply without an image, or one that does not decode (billed);
- `unsure`: no answer, a 5xx, or a job killed while it was out: it may have been paid
  (counted at its price until the provider's console says otherwise).

`tables/costs.csv` sums them per model for both branches (`study.prices.generation_spent`).
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING

from workflow_scripts.common.files import read_json, write_json

if TYPE_CHECKING:
    import pandas

LEDGER = "ledger"
OUTCOMES = ("billed", "refused", "failed", "unsure")
# A record is the only trace of a paid request: nothing writes it again.
RECORD_FIX = (
    "nothing writes a ledger record again: restore it by hand (its fields are "
    "video_api.ledger.record's or image_api.job's), or delete it and the costs leave that "
    "request out"
)
COLUMNS = [
    "provider", "model", "model_id", "operation", "task", "instance", "submitted_at",
    "seconds", "resolution", "price_per_second", "cost", "output", "outcome",
]  # fmt: skip


def stamp() -> tuple[str, str]:
    """(now as ISO 8601 to the millisecond, a record's file name made of it)."""
    now = datetime.now(timezone.utc)
    return now.isoformat(timespec="milliseconds"), now.strftime("%Y%m%dT%H%M%S%fZ")


def write_record(outdir: str | Path, run: str, task: str, instance: str, name: str,
                 entry: dict) -> dict:  # fmt: skip
    """Write one paid request's record (`entry`, with its `outcome`) as `<name>.json`."""
    assert entry["outcome"] in OUTCOMES, entry["outcome"]
    write_json(Path(outdir) / LEDGER / run / task / instance / f"{name}.json", entry)
    return entry


def read_ledger(outdir: str | Path) -> pandas.DataFrame:
    """Every paid request of the run under `outdir`, one row each (COLUMNS), oldest first;
    a record from before `output` and `outcome` were written is a billed video's."""
    import pandas as pd  # not for the jobs, which only write records

    rows = [
        {"output": "video", "outcome": "billed"}
        | read_json(path, RECORD_FIX, ["model", "operation", "cost"])
        for path in sorted((Path(outdir) / LEDGER).glob("*/*/*/*.json"))
    ]
    table = pd.DataFrame(rows, columns=COLUMNS)
    return table.sort_values("submitted_at", kind="stable").reset_index(drop=True)
