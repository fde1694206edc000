"""What a run covers against what its outdir already holds: a narrower run says so first."""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path

import pandas as pd


def _listed(names: Collection[str], most: int = 6) -> str:
    names = sorted(names)
    more = f" and {len(names) - most} more" if len(names) > most else ""
    return ", ".join(names[:most]) + more


def narrower_run_note(
    outdir: str | Path, instances: pd.DataFrame, models: Collection[str], registry: Collection[str]
) -> str | None:
    """A note when this run (`instances`, indexed by id with a `task` column; `models`)
    selects fewer instances or models than `outdir` holds (its previous
    `instances/selected.csv`, its model folders, `registry` naming which are models), since
    the run's tables, gallery, export and selected.csv then cover only its own; else None.
    """
    outdir = Path(outdir)
    selected = outdir / "instances" / "selected.csv"
    table = (
        pd.read_csv(selected) if selected.is_file() else pd.DataFrame(columns=["instance", "task"])
    )
    held, held_tasks = set(table["instance"]), set(table["task"])
    held_models = {
        folder.name.split("@")[0] for folder in outdir.glob("*") if folder.is_dir()
    } & set(registry)
    dropped, dropped_models = held - set(instances.index), held_models - set(models)
    if not dropped and not dropped_models:
        return None
    tasks = set(instances["task"])
    return "\n".join(
        [
            f"This run covers fewer instances or models than {outdir}/ holds:",
            f"  {outdir}/ holds: {len(held)} instances of {len(held_tasks)} tasks "
            f"({_listed(held_tasks)}); models {_listed(held_models) or 'none'}.",
            f"  this run: {len(instances)} instances of {len(tasks)} tasks "
            f"({_listed(tasks)}); models {_listed(models)}.",
            f"  Its tables, gallery index, official export and {selected} will cover only "
            "this run's; the videos and scores already there stay on disk but drop out of "
            "them.",
            f"  To keep both, give this run its own outdir: --config outdir={outdir}_subset",
        ]
    )
