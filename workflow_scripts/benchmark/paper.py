"""The paper's Table 2 as published (`benchmark.paper_table`: final x 100 overall and by
domain, with its source) and the registry's links to it: an entry's `paper_row` names the
row its videos are compared with in tables/vs_paper.csv."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

COLUMNS = ["row", "name", "type", "overall", "source"]  # the rest: one per domain


def read_paper_table(path: str | Path) -> pd.DataFrame:
    """The published leaderboard by row id; a ValueError naming the file if it is not one."""
    try:
        table = pd.read_csv(path, dtype={"row": str})
    except (OSError, ValueError) as err:
        raise ValueError(f"benchmark.paper_table {path}: not readable as CSV ({err})") from None
    missing = [column for column in COLUMNS if column not in table.columns]
    if missing or table["row"].duplicated().any():
        problem = f"lacks {', '.join(missing)}" if missing else "repeats a row id"
        raise ValueError(f"benchmark.paper_table {path} {problem}")
    return table.set_index("row")


def paper_rows(registry: dict, models: list[str]) -> dict[str, str]:
    """The run's models that name a row of the paper's table, with that row."""
    linked = {key: registry.get(key, {}).get("paper_row") for key in models}
    return {key: row for key, row in linked.items() if row}


def paper_row_problems(registry: dict, models: list[str], path: str | Path) -> list[str]:
    """Each of the run's models whose `paper_row` is not a row of the paper's table."""
    rows = paper_rows(registry, models)
    if not rows:
        return []
    try:
        known = read_paper_table(path).index
    except ValueError as err:
        return [str(err)]
    return [
        f"model {key!r}: paper_row {row!r} is not a row of {path} ({', '.join(known)})"
        for key, row in rows.items()
        if row not in known
    ]
