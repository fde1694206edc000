"""The image branch's tables (the paper's Table 4) from the image judge's score.json:

    <outdir>/<model>/<task>/judge_image/<instance>/score.json   status, success, reason

tables/image_success.csv: per model and level (1, 2, 3 and `avg`) the success rate in
percent over the `ok` documents with its bootstrap 95% CI, `n` ok documents and `errors`
(an `error` is left out and counted there, never taken as a failure). tables/
image_vs_paper.csv sets it beside the published Table 4 (`paper.TABLE4`), the paper's
number taken as fixed. Level `avg` is, as the paper's Avg., the unweighted mean of the
level rates (of the levels a model has any ok document for). Each level is resampled
from its own stream, `numpy.random.default_rng([seed, level])`, so that its CI does not
depend on the other levels; `avg`'s CI averages the levels' resample means draw by draw
(a bootstrap stratified by level). In image_vs_paper.csv `selected` counts the level's
selected image instances and `missing` those a model made elsewhere (`source: images`, the
published images) holds no image of: such a model is judged on the images it holds
(tables/coverage.csv).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pandas as pd

from workflow_scripts.aggregate import plots
from workflow_scripts.aggregate.coverage import records_frame
from workflow_scripts.aggregate.tables import RESAMPLES, SEED
from workflow_scripts.benchmark.paper import TABLE4, read_paper_table
from workflow_scripts.common.files import OutdirFileError, read_json, write_text
from workflow_scripts.common.layout import stage_fix
from workflow_scripts.common.logs import job_log
from workflow_scripts.judge.drift import with_judge

STAGE = "judge_image"
LEVELS = {"avg": "avg", 1: "easy", 2: "mid", 3: "hard"}  # our level -> Table 4's column
VERSION = "judge_model_version"  # the version each score.json's reply reported
RESULTS = ["model", "task", "instance", "level", "status", "success", VERSION]
SUCCESS = ["model", "level", "success", "success_ci_low", "success_ci_high", "n", "errors"]
VS_PAPER = [
    "model", "paper_row", "paper_name", "level", "success", "success_ci_low",
    "success_ci_high", "paper", "difference", "difference_ci_low", "difference_ci_high", "n",
    "selected", "missing",
]  # fmt: skip


def _read(path: Path) -> dict:
    """A score.json of the image judge; an OutdirFileError for any other file."""
    document = read_json(path, stage_fix(path), ["status"])
    status, success = document["status"], document.get("success")
    if status not in ("ok", "error") or (status == "ok" and not isinstance(success, bool)):
        problem = "is not an image judge's score (status ok or error; success true or false)"
        raise OutdirFileError(path, problem, stage_fix(path))
    return document


def image_results(paths: Iterable[str | Path]) -> pd.DataFrame:
    """One row per score.json (model and task from its path, level from its instance id
    `<task>_lv<N>_<id>`); `success` is empty where the status is `error`."""
    rows = []
    for path in map(Path, paths):
        instance, stage, task, model = (p.name for p in path.parents[:4])
        match = re.fullmatch(rf"{re.escape(task)}_lv([1-3])_.+", instance)
        if stage != STAGE or not match:
            raise ValueError(f"{path}: not <model>/<task>/{STAGE}/<task>_lv<N>_<id>/score.json")
        document = _read(path)
        status = document["status"]
        success = document["success"] if status == "ok" else None
        version = document.get("model_version")
        rows.append([model, task, instance, int(match[1]), status, success, version])
    return pd.DataFrame(rows, columns=RESULTS).astype({"success": "boolean"})


def _resampled(values: np.ndarray, seed, resamples: int) -> np.ndarray:
    """The means of `resamples` resamples of `values` with replacement (as tables.bootstrap)."""
    draws = np.random.default_rng(seed).integers(0, len(values), (resamples, len(values)))
    return values[draws].mean(axis=1)


def _row(model, level, rate, means, n: int, errors: int) -> dict:
    low, high = np.percentile(means, [2.5, 97.5]) if n else (np.nan, np.nan)
    return dict(zip(SUCCESS, [model, level, rate, low, high, n, errors], strict=True))


def image_success(
    results: pd.DataFrame, seed: int = SEED, resamples: int = RESAMPLES
) -> pd.DataFrame:
    """tables/image_success.csv: per model (as first seen) its levels, then `avg`: the
    unweighted mean of the rates of the levels it has (a level missing, or of only errors,
    is left out of it), its CI stratified by level (see the module). A level of only
    errors keeps its row, with `n` 0 and no rate."""
    rows = []
    for model, own in results.groupby("model", sort=False):
        kept = []  # (rate, resample means, n) of each level with an ok document
        for level, cell in own.groupby("level"):
            ok = cell.loc[cell["status"] == "ok", "success"].to_numpy(float) * 100
            errors = int((cell["status"] != "ok").sum())
            if not len(ok):
                rows.append(_row(model, level, np.nan, None, 0, errors))
                continue
            kept.append((ok.mean(), _resampled(ok, [seed, int(level)], resamples), len(ok)))
            rows.append(_row(model, level, *kept[-1], errors))
        rates, means, counts = zip(*kept, strict=True) if kept else ([np.nan], None, [0])
        average = np.mean(means, axis=0) if kept else None
        errors = int((own["status"] != "ok").sum())
        rows.append(_row(model, "avg", np.mean(rates), average, sum(counts), errors))
    return pd.DataFrame(rows, columns=SUCCESS)


def image_vs_paper(
    results: pd.DataFrame,
    rows: dict[str, str],
    paper: pd.DataFrame,
    seed: int = SEED,
    resamples: int = RESAMPLES,
    levels: dict[str, int] | None = None,
    coverage: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """tables/image_vs_paper.csv: per model of `rows` (model -> Table 4's row id) judged
    here, `avg` then levels 1, 2, 3 beside Table 4's avg, easy, mid and hard. `levels`:
    the selected image instances' level by id; `coverage`: the records (model, instance,
    found) of the models made elsewhere."""
    if rows and (unknown := sorted(set(rows.values()) - set(paper.index))):
        raise ValueError(f"not rows of the paper's Table 4: {', '.join(unknown)}")
    table = image_success(results[results["model"].isin(rows)], seed, resamples)
    out = []
    for model in (model for model in rows if model in set(table["model"])):
        published = paper.loc[rows[model]]
        own = table[table["model"] == model].set_index("level")
        for level, column in LEVELS.items():
            if level not in own.index:
                continue
            line, value = own.loc[level], published[column]
            ours = line[["success", "success_ci_low", "success_ci_high"]].tolist()
            head = [model, rows[model], published["name"], level, *ours, value]
            tail = [v - value for v in ours] + [line["n"], *_counts(levels, coverage, model, level)]
            out.append(head + tail)
    return pd.DataFrame(out, columns=VS_PAPER)


def _counts(levels, coverage, model, level) -> tuple[int | None, int]:
    """The selected image instances of `level` (`avg`: all) and how many `model` lacks."""
    if levels is None:
        return None, 0
    mine = {i for i, lv in levels.items() if level == "avg" or int(lv) == int(level)}
    lacking = 0
    if coverage is not None and len(coverage):
        own = coverage[(coverage["model"] == model) & ~coverage["found"].astype(bool)]
        lacking = int(own["instance"].isin(mine).sum())
    return len(mine), lacking


def image_tables_job(smk) -> None:
    """Rule `image_tables`: every judge_image folder's score.json into the two tables and
    the plot; `params.paper_table` is read only where `params.paper_rows` names a row. Both
    tables end with their judge and its versions (`judge.drift`)."""
    with job_log(smk):
        paths = [
            path
            for folder in smk.input.scores
            for path in sorted(Path(folder).glob("*/score.json"))
        ]
        results = image_results(paths)
        success = image_success(results)
        rows = smk.params.paper_rows
        paper = read_paper_table(smk.params.paper_table, TABLE4) if rows else None
        levels = getattr(smk.params, "levels", None)
        coverage = records_frame(getattr(smk.params, "coverage", []))
        compared = image_vs_paper(results, rows, paper, levels=levels, coverage=coverage)
        judge = smk.params.judge_model
        success = with_judge(success, judge, results[VERSION])
        compared = with_judge(compared, judge, results.loc[results.model.isin(rows), VERSION])
        write_text(smk.output.success, success.to_csv(index=False))
        write_text(smk.output.vs_paper, compared.to_csv(index=False))
        plots.image_bars(success, compared, smk.output.plot)
        print(success.to_string(index=False))
