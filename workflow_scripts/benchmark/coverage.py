"""What a run covers against what its outdir already holds: a narrower run says so first."""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path

import pandas as pd

from workflow_scripts.common.files import OutdirFileError, read_csv
from workflow_scripts.common.layout import SELECTED_FIX


def _listed(names: Collection[str], most: int = 6) -> str:
    names = sorted(names)
    more = f" and {len(names) - most} more" if len(names) > most else ""
    return ", ".join(names[:most]) + more


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'s' * (n != 1)}"


def narrower_run_note(
    outdir: str | Path, instances: pd.DataFrame, models: Collection[str], registry: Collection[str]
) -> str | None:
    """A note when this run (`instances`, indexed by id with a `task` column; `models`)
    selects fewer instances or models than `outdir` holds (its previous
    `instances/selected.csv`, its model folders, `registry` naming which are models), since
    the run's tables, gallery, export and selected.csv then cover only its own; else None.
    An unreadable selected.csv is a note too, naming it and the fix, never an error.
    """
    outdir = Path(outdir)
    selected = outdir / "instances" / "selected.csv"
    try:
        table = (
            read_csv(selected, SELECTED_FIX, ["instance", "task"])
            if selected.is_file()
            else pd.DataFrame(columns=["instance", "task"])
        )
    except OutdirFileError as error:  # the run writes it again: no reason to stop it
        return f"{error} (What this run covers is not compared with it.)"
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
