"""The paper's published tables as data, each row with its source, and the registry's links
to them: an entry's `paper_row` names the row it is compared with (a video model's in
tables/vs_paper.csv, an image model's in tables/image_vs_paper.csv).

- Table 2 (`benchmark.paper_table`, tasks/paper_table2.csv): the video models' final x 100
  overall and by domain.
- Table 4 (`benchmark.paper_image_table`, tasks/paper_table4.csv): the image models' success
  rate in percent at each level (easy, mid, hard: levels 1, 2, 3) and `avg`, the unweighted
  mean of the three levels. The official image judge compares each image with the task's
  ground-truth image, which the public release withholds.
- Table 9 (`TABLE9_SKILL_TASKS`): the number of tasks per skill tag. The release's
  task_names.yaml, which the workflow reads, counts some tags otherwise; the release stands
  and tables/skills.csv says where the two differ (`aggregate.tables.skills`).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

TABLE2, TABLE4 = "benchmark.paper_table", "benchmark.paper_image_table"
REQUIRED = {  # each table's columns by its config key; Table 2's rest: one per domain
    TABLE2: ["row", "name", "type", "overall", "source"],
    TABLE4: ["row", "name", "type", "avg", "easy", "mid", "hard", "source"],
}
COLUMNS = REQUIRED[TABLE2]
# Table 9 (appendix A.4): tasks per skill tag (27 tasks; tags are not exclusive).
TABLE9_SKILL_TASKS = {
    "planning": 12, "physics": 8, "spatial": 7, "attribute_grounding": 6, "affordance": 5,
    "topology": 3, "temporal": 3,
}  # fmt: skip


def read_paper_table(path: str | Path, key: str = TABLE2) -> pd.DataFrame:
    """The published table of config `key` by row id; a ValueError naming the key and the
    file if it is not one (unreadable, without `REQUIRED[key]`, a row id repeated)."""
    try:
        table = pd.read_csv(path, dtype={"row": str})
    except (OSError, ValueError) as err:
        raise ValueError(f"{key} {path}: not readable as CSV ({err})") from None
    missing = [column for column in REQUIRED[key] if column not in table.columns]
    if missing or table["row"].duplicated().any():
        problem = f"lacks {', '.join(missing)}" if missing else "repeats a row id"
        raise ValueError(f"{key} {path} {problem}")
    return table.set_index("row")


def paper_rows(registry: dict, models: list[str]) -> dict[str, str]:
    """The run's models that name a row of the paper's table, with that row."""
    linked = {key: registry.get(key, {}).get("paper_row") for key in models}
    return {key: row for key, row in linked.items() if row}


def paper_row_problems(
    registry: dict, models: list[str], path: str | Path, key: str = TABLE2
) -> list[str]:
    """Each of the run's models whose `paper_row` is not a row of the paper's table (of
    config `key`)."""
    rows = paper_rows(registry, models)
    if not rows:
        return []
    try:
        known = read_paper_table(path, key).index
    except ValueError as err:
        return [str(err)]
    return [
        f"model {key!r}: paper_row {row!r} is not a row of {path} ({', '.join(known)})"
        for key, row in rows.items()
        if row not in known
    ]
