"""The published metadata table: Parquet with one schema (`SCHEMA`) for every model.

`datasets` requires the metadata files of one dataset to agree on their columns' types, which
JSON lines or CSV leave to each file's values (a column without a value in one model's file,
a baseline's seed say, has no type there)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from vgi_models.state import atomic_path

METADATA = "metadata.parquet"
_TEXT, _INT, _REAL = pa.string(), pa.int64(), pa.float64()
SCHEMA = pa.schema(
    [
        *((name, _TEXT) for name in ("file_name", "model", "run", "condition")),
        ("seed", _INT),
        *((name, _TEXT) for name in ("settings_digest", "task", "instance")),
        ("level", _INT),
        ("domain", _TEXT),
        ("skills", pa.list_(_TEXT)),
        ("step", _INT),
        ("estimate", _TEXT),
        ("judge_status", _TEXT),
        *((name, _REAL) for name in ("score", "completeness", "rubric")),
        ("tier", _INT),
        ("strict_success", pa.bool_()),
        (
            "rubric_items",
            pa.list_(pa.struct([("item", _TEXT), ("violations", _INT), ("evidence", _TEXT)])),
        ),
        *((name, _TEXT) for name in ("verdict", "judge_model_version")),
        ("transition_from", _INT),
        *((name, _TEXT) for name in ("transition_label", "transition_source", "human_label")),
    ]
)


def write_metadata(path: Path, rows: list[dict]) -> None:
    """The rows as `path` (Parquet, `SCHEMA`), written whole or not at all."""
    with atomic_path(path) as temporary:
        pq.write_table(pa.Table.from_pylist(rows, schema=SCHEMA), temporary)
