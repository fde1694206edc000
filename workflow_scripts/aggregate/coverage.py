"""tables/coverage.csv and tables/coverage_missing.csv: how much of the selection each
model made elsewhere (`source: videos` or `images`, e.g. the dataset's published
generations) holds a file of.

Such a model is judged on the files its folder holds, as the official judge judges every
file of a model's folder; a selected instance without one is counted here, never a stop.
`coverage.csv` has one row per (model, level), levels 1, 2, 3 then `all`: `selected`
instances, `found` files, `missing`, `missing_pct`; `coverage_missing.csv` one row per
instance without a file, with the names looked for.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import pandas as pd

from workflow_scripts.common.files import write_text
from workflow_scripts.common.logs import job_log

COVERAGE = ["model", "output", "level", "selected", "found", "missing", "missing_pct"]
MISSING = ["model", "output", "task", "level", "instance", "looked"]


def coverage_table(records: pd.DataFrame) -> pd.DataFrame:
    """Per model (as first seen) and level, then `all`: selected, found and missing."""
    rows = []
    for (model, output), own in records.groupby(["model", "output"], sort=False):
        cells = [(level, cell) for level, cell in own.groupby("level")] + [("all", own)]
        for level, cell in cells:
            selected, found = len(cell), int(cell["found"].sum())
            missing = selected - found
            pct = 100 * missing / selected if selected else float("nan")
            rows.append([model, output, level, selected, found, missing, pct])
    return pd.DataFrame(rows, columns=COVERAGE)


def missing_table(records: pd.DataFrame) -> pd.DataFrame:
    """Every selected instance a model's folder holds no file of."""
    missing = records[~records["found"].astype(bool)]
    return missing[MISSING].reset_index(drop=True)


def records_frame(records: Iterable[Mapping]) -> pd.DataFrame:
    """The coverage records (`Study.coverage` as a list of dicts) as a frame."""
    columns = ["model", "output", "task", "level", "instance", "found", "looked"]
    return pd.DataFrame(list(records), columns=columns)


def coverage_job(smk) -> None:
    """Rule `coverage`: `params.coverage` (the study's records) into the two tables."""
    with job_log(smk):
        records = records_frame(smk.params.coverage)
        table = coverage_table(records)
        write_text(smk.output.coverage, table.to_csv(index=False))
        write_text(smk.output.missing, missing_table(records).to_csv(index=False))
        print(table.to_string(index=False))
