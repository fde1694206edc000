"""Human against VLM transition labels: the pairs of a run's transition documents as a
table, the sheet of pairs still to label by hand, and their agreement (Cohen's kappa)."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from vgi_models.video import checkpoint_name
from workflow_scripts.common import layout
from workflow_scripts.common.files import read_json, write_json, write_text
from workflow_scripts.common.logs import job_log
from workflow_scripts.transitions.labels import LABELS
from workflow_scripts.transitions.settings import Pair

PAIR_COLUMNS = (
    *("model", "task", "instance", "from", "to", "label", "source", "evidence"),
    *("earlier_state", "later_state", "vlm_label", "human_label"),
)


def _documents(folders: Iterable[str | Path]):
    """(model, task, instance, document) of every transitions document in `folders`
    (rule `label_transitions`' outputs)."""
    for model, task, instance, path in layout.documents(folders, None):
        yield model, task, instance, read_json(path, layout.stage_fix(path), ["status"])


def pairs_table(folders: Iterable[str | Path]) -> pd.DataFrame:
    """Every listed pair of the transitions documents in `folders`, one row each."""
    rows = [
        {"model": model, "task": task, "instance": instance, **pair}
        for model, task, instance, document in _documents(folders)
        for pair in document["pairs"]
    ]
    return pd.DataFrame(rows, columns=list(PAIR_COLUMNS))


def label_sheet(
    folders: Iterable[str | Path], pairs: Sequence[Pair], outdir: str | Path
) -> pd.DataFrame:
    """The configured pairs of every video that no human has labelled, with an empty `label`."""
    rows = []
    for model, task, instance, document in _documents(folders):
        run = layout.run_folder(outdir, model, task, instance)
        listed = {(pair["from"], pair["to"]): pair for pair in document["pairs"]}
        for a, b in pairs:
            pair = listed.get((a, b), {})
            if pair.get("human_label") is None:
                videos = [str(run / "denoise" / checkpoint_name(s, "x0")) for s in (a, b)]
                rows.append((model, instance, task, a, b, *videos, pair.get("vlm_label"), ""))
    columns = ["model", "instance", "task", "from", "to", "from_video", "to_video"]
    return pd.DataFrame(rows, columns=[*columns, "vlm_label", "label"])


def agreement(pairs: pd.DataFrame) -> tuple[pd.DataFrame, float]:
    """Human (rows) x VLM (columns) label counts and Cohen's kappa, over pairs with both.

    kappa = (p_o - p_e) / (1 - p_e), p_o the share of pairs on the diagonal and p_e the
    agreement expected by chance, sum_k (human share of k) x (VLM share of k); NaN when
    undefined (no pairs, or both sides give one and the same label throughout).
    """
    both = pairs.dropna(subset=["human_label", "vlm_label"])
    matrix = pd.crosstab(both["human_label"], both["vlm_label"])
    matrix = matrix.reindex(index=list(LABELS), columns=list(LABELS), fill_value=0)
    matrix.index.name, matrix.columns.name = "human_label", "vlm_label"
    counts = matrix.to_numpy()
    n = counts.sum()
    expected = counts.sum(axis=1) @ counts.sum(axis=0) / n**2 if n else 1.0
    if expected == 1.0:
        return matrix, math.nan
    return matrix, float((np.trace(counts) / n - expected) / (1 - expected))


def export_label_sheet_job(smk) -> None:
    """Rule `export_label_sheet`: the pairs still to label by hand, as a CSV to fill in."""
    with job_log(smk):
        pairs = [tuple(pair) for pair in smk.params.pairs]
        sheet = label_sheet(smk.input, pairs, smk.config["outdir"])
        write_text(smk.output[0], sheet.to_csv(index=False))
        print(f"{len(sheet)} pairs to label")


def label_agreement_job(smk) -> None:
    """Rule `label_agreement`: the human x VLM confusion matrix and Cohen's kappa."""
    with job_log(smk):
        matrix, kappa = agreement(pairs_table(smk.input))
        write_text(smk.output.matrix, matrix.to_csv())
        summary = {"kappa": None if math.isnan(kappa) else kappa, "n": int(matrix.to_numpy().sum())}
        write_json(smk.output.kappa, summary)
        print(json.dumps(summary))
