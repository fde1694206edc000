"""The paper's published tables as data, each row with its source, and the registry's links
to them: an entry's `paper_row` names the row it is compared with (a video model's in
tables/vs_paper.csv, an image model's in tables/image_vs_paper.csv).

- The video tables (`benchmark.paper_table`, tasks/paper_tables.csv): every number the
  paper prints for a table the workflow computes, one a line: its `table` (2, 3, 5, 6, 7,
  11, 12, 13, 14, 15, and D.3 for appendix D.3's per-task scores), `section` (the block it
  sits in), `row` (the model, judge design or `pool`/`mean`/`human` it belongs to), `cell`
  (domain, group, skill, task or step pair), `level` (easy, mid, hard, avg), `metric`, the
  `value` as printed (percent, AUC as a fraction), its `source` and a `note` where the paper
  leaves something unknown (aggregate.vs_paper sets them beside the run's).
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

TABLES, TABLE4 = "benchmark.paper_table", "benchmark.paper_image_table"
REQUIRED = {  # each file's columns by its config key
    TABLES: ["table", "section", "row", "name", "cell", "level", "metric", "value", "source"],
    TABLE4: ["row", "name", "type", "avg", "easy", "mid", "hard", "source"],
}
CELL = ["table", "row", "cell", "level", "metric"]  # what names one number of the paper
# Table 9 (appendix A.4): tasks per skill tag (27 tasks; tags are not exclusive).
TABLE9_SKILL_TASKS = {
    "planning": 12, "physics": 8, "spatial": 7, "attribute_grounding": 6, "affordance": 5,
    "topology": 3, "temporal": 3,
}  # fmt: skip


def read_paper_table(path: str | Path, key: str = TABLES) -> pd.DataFrame:
    """The published numbers of config `key`: the video tables one number a line (`note`
    empty where none), Table 4 by row id; a ValueError naming the key and the file if it is
    not one (unreadable, without `REQUIRED[key]`, a number given twice, a value not one)."""
    try:
        table = pd.read_csv(path, dtype=str, keep_default_na=False)
    except (OSError, ValueError) as err:
        raise ValueError(f"{key} {path}: not readable as CSV ({err})") from None
    missing = [column for column in REQUIRED[key] if column not in table.columns]
    keys = CELL if key == TABLES else ["row"]
    if missing or table[keys].duplicated().any():
        problem = f"lacks {', '.join(missing)}" if missing else f"repeats a {'/'.join(keys)}"
        raise ValueError(f"{key} {path} {problem}")
    numbers = ["value"] if key == TABLES else ["avg", "easy", "mid", "hard"]
    values = table[numbers].apply(pd.to_numeric, errors="coerce")
    if values.isna().any().any():
        raise ValueError(f"{key} {path}: a {'/'.join(numbers)} that is not a number")
    table[numbers] = values
    if key == TABLES:
        return table.reindex(columns=[*REQUIRED[key], "note"], fill_value="")
    return table.set_index("row")


def paper_rows(registry: dict, models: list[str]) -> dict[str, str]:
    """The run's models that name a row of the paper's table, with that row."""
    linked = {key: registry.get(key, {}).get("paper_row") for key in models}
    return {key: row for key, row in linked.items() if row}


def paper_row_problems(
    registry: dict, models: list[str], path: str | Path, key: str = TABLES
) -> list[str]:
    """Each of the run's models whose `paper_row` is not a row of the paper's tables (of
    config `key`)."""
    rows = paper_rows(registry, models)
    if not rows:
        return []
    try:
        table = read_paper_table(path, key)
    except ValueError as err:
        return [str(err)]
    known = pd.unique(table["row"]) if key == TABLES else table.index
    return [
        f"model {key!r}: paper_row {row!r} is not a row of {path} ({', '.join(known)})"
        for key, row in rows.items()
        if row not in known
    ]
