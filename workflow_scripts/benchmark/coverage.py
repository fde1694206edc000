"""What a run covers against what its outdir already holds: a narrower run says so first."""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path

import pandas as pd


def _listed(names: Collection[str], most: int = 6) -> str:
    names = sorted(names)
    more = f" and {len(names) - most} more" if len(names) > most else ""
    return ", ".join(names[:most]) + more


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'s' * (n != 1)}"


def _selected(path: Path) -> pd.DataFrame:
    """The `instance` and `task` columns of a previous run's selected.csv (none if absent);
    raises ValueError saying why it cannot be read (empty, malformed, other columns)."""
    if not path.is_file():
        return pd.DataFrame(columns=["instance", "task"])
    try:
        table = pd.read_csv(path)
    except pd.errors.EmptyDataError:
        raise ValueError("it is empty") from None
    except (pd.errors.ParserError, UnicodeDecodeError) as err:
        raise ValueError(f"not a CSV: {err}") from None
    if missing := {"instance", "task"} - set(table.columns):
        raise ValueError(f"no column {', '.join(sorted(missing))}")
    return table


def narrower_run_note(
    outdir: str | Path, instances: pd.DataFrame, models: Collection[str], registry: Collection[str]
) -> str | None:
    """A note when this run (`instances`, indexed by id with a `task` column; `models`)
    selects fewer instances or models than `outdir` holds (its previous
    `instances/selected.csv`, its model folders, `registry` naming which are models), since
    the run's tables, gallery, export and selected.csv then cover only its own; a note
    naming selected.csv when it cannot be read; else None.
    """
    outdir = Path(outdir)
    selected = outdir / "instances" / "selected.csv"
    try:
        table = _selected(selected)
    except ValueError as err:
        return (
            f"{selected} cannot be read ({err}): delete it, and rule select_instances writes "
            f"it again; until then no run is compared with what {outdir}/ already holds."
        )
    held, held_tasks = set(table["instance"]), set(table["task"])
    held_models = {
        folder.name.split("@")[0] for folder in outdir.glob("*") if folder.is_dir()
    } & set(registry)
    dropped, dropped_models = held - set(instances.index), held_models - set(models)
    if not dropped and not dropped_models:
        return None
    tasks = set(instances["task"])
    lost = " and ".join(
        part
        for part in (
            _count(len(dropped), "instance") if dropped else "",
            f"{_count(len(dropped_models), 'model')} {_listed(dropped_models)}"
            if dropped_models
            else "",
        )
        if part
    )
    return "\n".join(
        [
            f"This run covers less than {outdir}/ already holds:",
            f"  {outdir}/ holds {_count(len(held), 'instance')} of "
            f"{_count(len(held_tasks), 'task')} ({_listed(held_tasks)}) and "
            f"{_count(len(held_models), 'model')} ({_listed(held_models)});",
            f"  this run selects {_count(len(instances), 'instance')} of "
            f"{_count(len(tasks), 'task')} ({_listed(tasks)}) and "
            f"{_count(len(models), 'model')} ({_listed(models)}).",
            f"  Its tables, gallery index, official export and {selected} will cover only "
            f"its own, leaving out {lost} (their files stay on disk).",
            f"  To keep both, give this run its own outdir: --config outdir={outdir}_subset",
        ]
    )
