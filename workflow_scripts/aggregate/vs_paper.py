"""tables/vs_paper.csv: every number the paper prints for a table the workflow computes
(`benchmark.paper_table`, read by `benchmark.paper.read_paper_table`), one a row, beside
the run's own with its bootstrap 95% CI and the difference (the paper's number taken as
fixed), in the paper's units: percent, AUC as a fraction.

A paper row is set beside each run model whose registry entry names it (`paper_row`);
Table 7's `pool` beside the run's model `all` (`transitions.pool`); the judge designs of
Tables 3, 14 and 15 beside the run's judge of the same name (`main`, or a `judges:`
variant named like the paper's row, e.g. `gpt_5_mini`). A number without a counterpart in
the run keeps its row with the run's columns empty and `note` saying why.

Where each comes from: Tables 2, 11, 12 (and Table 6's domains) `final_by_domain_level`,
`metrics_by_domain_level`, `strict_success`; Table 5 `overlap_groups` (level `avg`);
Table 6's skills `skills`; Table 7 `transitions`; Table 13 `subset_stability` (no CIs:
that table has none); Tables 3/14 `judge_reliability`, Table 15 its `by_slice`; D.3
(appendix D.3's per-task scores) each task's mean. A `delta` (Tables 5, 6, D.3) is the VBVR
model's value minus its base model's (`VBVR_PAIRS`): Table 5's from `overlap_groups`, the
others' CI from resampling each model's instances apart.

`n` counts what the run's value averages (instances; tasks in Table 5; labelled pairs in
Table 7; preference pairs in Tables 3, 14, 15); for Tables 2, 11 and 12, `selected` counts
the run's selected instances of the cell and `missing` those a model made elsewhere lacks
a file of (tables/coverage.csv)."""

from __future__ import annotations

from collections.abc import Mapping
from types import SimpleNamespace

import numpy as np
import pandas as pd

from workflow_scripts.aggregate.tables import RESAMPLES, SEED, bootstrap

COLUMNS = [
    "table", "section", "model", "paper_row", "paper_name", "cell", "level", "metric",
    "run", "run_ci_low", "run_ci_high", "paper", "difference", "difference_ci_low",
    "difference_ci_high", "n", "selected", "missing", "note",
]  # fmt: skip
LEVELS = {"easy": "1", "mid": "2", "hard": "3", "avg": "avg"}
# run table (and its key column for the paper's `cell`) per paper table of models
BY_MODEL = {
    "2": ("final_by_domain_level", "domain"),
    "11": ("metrics_by_domain_level", "domain"),
    "12": ("strict_success", "domain"),
    "5": ("overlap_groups", "group"),
}
JUDGE_TABLES = {"3": "judge_reliability", "14": "judge_reliability", "15": "by_slice"}
NOT_RUN = {
    "7": "no transition labels pooled in this run (transitions.pool)",
    "13": "Table 13 needs a benchmark.subset: full run (tables/subset_stability.csv)",
    "judge": "no human preferences in this run (judge_reliability.preferences or .rankings)",
}


def vs_paper(
    paper: pd.DataFrame,
    tables: Mapping[str, pd.DataFrame],
    results: pd.DataFrame,
    rows: Mapping[str, str],
    pairs: Mapping[str, str],
    seed: int = SEED,
    resamples: int = RESAMPLES,
    selected: pd.DataFrame | None = None,
    missing: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """One row per number of `paper` (`read_paper_table`) and run model linked to its row
    (one row without a model where none is), in the paper's order.

    `tables`: the run's tables by file name (those absent count as not run); `results`:
    the per-instance results; `rows`: model -> paper row; `pairs`: VBVR model -> base;
    `selected`: the selected instances' domain and level by instance; `missing`: the
    coverage records (model, instance, found) of the models made elsewhere."""
    fives = set(paper.loc[paper["table"] == "13", "row"]) - {"mean"}
    run = SimpleNamespace(
        tables=tables, results=results, pairs=pairs, seed=seed, resamples=resamples,
        table13=[model for model, row in rows.items() if row in fives],
    )  # fmt: skip
    models: dict[str, list[str]] = {}
    for model, row in rows.items():
        models.setdefault(row, []).append(model)
    out = []
    for number in paper.to_dict("records"):
        linked = _linked(number, models, tables)
        for model in linked or [None]:
            value = _value(number, model, run)
            note = value.pop("note", None) or _why_not(number, tables, linked)
            if model and "run" not in value and not note:
                note = "the run has no instance of this cell"
            out.append(
                {
                    "table": number["table"],
                    "section": number["section"],
                    "model": model,
                    "paper_row": number["row"],
                    "paper_name": number["name"],
                    "cell": number["cell"],
                    "level": number["level"],
                    "metric": number["metric"],
                    **value,
                    "paper": number["value"],
                    **_counts(number, model, selected, missing),
                    "note": "; ".join(n for n in (number["note"], note) if n),
                }
            )
    frame = pd.DataFrame(out, columns=COLUMNS)
    ours = frame[["run", "run_ci_low", "run_ci_high"]].astype(float)
    differences = ("difference", "difference_ci_low", "difference_ci_high")
    for bound, name in zip(ours, differences, strict=True):
        frame[name] = ours[bound] - frame["paper"]
    return frame.astype({"n": "Int64", "selected": "Int64", "missing": "Int64"})


def _linked(number, models, tables) -> list[str]:
    """The run's models (or judge, or `all`) set beside this paper number."""
    table = number["table"]
    if table == "7":
        frame = tables.get("transitions")
        return ["all"] if frame is not None and (frame["model"] == "all").any() else []
    if table in JUDGE_TABLES:
        frame = tables.get(JUDGE_TABLES[table])
        known = set(frame["judge"]) if frame is not None else set()
        return [number["row"]] if number["row"] in known else []
    if table == "13" and number["row"] == "mean":
        return ["mean"] if "subset_stability" in tables else []
    if table == "13" and "subset_stability" not in tables:
        return []
    return models.get(number["row"], [])


def _why_not(number, tables, linked) -> str:
    """Why a paper number has no run value ("" when it has one)."""
    if linked:
        return ""
    table = number["table"]
    if table in NOT_RUN and (table != "13" or "subset_stability" not in tables):
        return NOT_RUN[table]
    if table in JUDGE_TABLES:
        if JUDGE_TABLES[table] not in tables:
            return NOT_RUN["judge"]
        return f"no judge of this run is named {number['row']!r} (judges:)"
    if number["row"] == "human":
        return ""  # the data's note says it
    return f"no model of this run names paper_row {number['row']!r}"


def _value(number, model, run) -> dict:
    """The run's value, CI and n for one paper number (percent where the paper's is)."""
    if model is None:
        return {}
    tables, results = run.tables, run.results
    table, metric, level = number["table"], number["metric"], LEVELS[number["level"]]
    if table == "7":
        frame = tables["transitions"]
        cell = frame[(frame["model"] == "all") & (frame["step_pair"] == number["cell"])]
        return _cell(cell, metric, 1.0)
    if table in JUDGE_TABLES:
        frame = tables[JUDGE_TABLES[table]]
        cell = frame[frame["judge"] == model]
        if table == "15":
            cell = cell[cell["slice"] == number["cell"]]
        scale = 1.0 if metric == "auc" else 100.0
        return _cell(cell, metric, scale, ("_lo", "_hi"), count="n_pairs")
    if table == "13":
        return _stability(tables["subset_stability"], model, metric, run.table13)
    if metric == "delta" and table in ("6", "D.3"):
        return _delta(number, model, results, run.pairs, run.seed, run.resamples)
    if table == "D.3":
        mine = results[(results["model"] == model) & (results["task"] == number["cell"])]
        return _mean(mine["final"], run.seed, run.resamples)
    if table == "6":
        if number["section"].startswith("skill"):
            frame = tables["skills"]
            cell = frame[(frame["model"] == model) & (frame["skill"] == number["cell"])]
            return _cell(cell, "final", 100.0)
        name, column = "final_by_domain_level", "domain"
    else:
        name, column = BY_MODEL[table]
    frame = tables[name]
    cell = frame[
        (frame["model"] == model)
        & (frame[column] == number["cell"])
        & (frame["level"].astype(str) == level)
    ]
    if table == "5" and metric == "delta":
        return _cell(cell, "delta", 100.0, count="delta_n")
    return _cell(cell, metric, 100.0)


def _cell(cell, metric, scale, bounds=("_ci_low", "_ci_high"), count="n") -> dict:
    """One run table's value of `metric` and its CI, times `scale`; {} for no cell."""
    if cell.empty or pd.isna(cell[metric].iloc[0]):
        return {"note": "no judged instance in the run's cell"} if not cell.empty else {}
    first = cell.iloc[0]
    values = [first[metric], first[metric + bounds[0]], first[metric + bounds[1]]]
    names = ("run", "run_ci_low", "run_ci_high")
    return dict(zip(names, (scale * v for v in values), strict=True)) | {"n": first[count]}


def _mean(values: pd.Series, seed, resamples) -> dict:
    """The mean of `values` x 100 with its bootstrap CI and n."""
    values = values.dropna().to_numpy(float)
    if not len(values):
        return {"note": "no judged instance in the run's cell"}
    mean, low, high = (100 * v[0] for v in bootstrap(values, seed, resamples))
    return {"run": mean, "run_ci_low": low, "run_ci_high": high, "n": len(values)}


def _delta(number, model, results, pairs, seed, resamples) -> dict:
    """Table 6 / D.3: the VBVR model's mean of the cell minus its base model's, x 100; the
    CI from resampling each model's instances apart."""
    base = pairs.get(model)
    if base is None or base not in set(results["model"]):
        return {"note": f"{model}'s base model is not in this run (VBVR_PAIRS)"}
    cell = number["cell"]
    if number["table"] == "D.3":
        inside = results["task"] == cell
    elif number["section"].startswith("skill"):
        inside = results["skills"].map(lambda tags: cell in tags)
    else:
        inside = pd.Series(True, index=results.index) if cell == "overall" else (
            results["domain"] == cell
        )  # fmt: skip
    a, b = (results[inside & (results["model"] == m)]["final"].dropna() for m in (model, base))
    if not len(a) or not len(b):
        return {"note": "no judged instance in the run's cell"}
    rng = np.random.default_rng(seed)
    draws = [v.to_numpy(float)[rng.integers(0, len(v), (resamples, len(v)))] for v in (a, b)]
    spread = draws[0].mean(axis=1) - draws[1].mean(axis=1)
    low, high = np.percentile(spread, [2.5, 97.5])
    return {
        "run": 100 * (a.mean() - b.mean()),
        "run_ci_low": 100 * low,
        "run_ci_high": 100 * high,
        "n": len(a) + len(b),
    }


def _stability(frame, model, metric, fives) -> dict:
    """Table 13: the run's half, full or difference at level avg, x 100 (no CI; `n` the
    instances of the full set); `mean`: the mean over `fives`, the run's models that name
    one of Table 13's five rows (`n`: how many are in the table)."""
    frame = frame[frame["level"].astype(str) == "avg"].set_index("model")
    if model != "mean":
        if model not in frame.index:
            return {}
        return {"run": 100 * frame.at[model, metric], "n": frame.at[model, "n_full"]}
    named = [m for m in fives if m in frame.index]
    if not named:
        return {"note": "no model of this run names a Table 13 row (paper_row)"}
    return {"run": 100 * frame.loc[named, metric].mean(), "n": len(named)}


def _counts(number, model, selected, missing) -> dict:
    """Tables 2, 11, 12: the selected instances of the cell and how many of them `model`'s
    folder lacks (0 for a model the workflow makes)."""
    if selected is None or model is None or number["table"] not in ("2", "11", "12"):
        return {}
    mine = selected
    if number["cell"] != "overall":
        mine = mine[mine["domain"] == number["cell"]]
    if number["level"] != "avg":
        mine = mine[mine["level"].astype(str) == LEVELS[number["level"]]]
    lacking = 0
    if missing is not None and len(missing):
        own = missing[(missing["model"] == model) & ~missing["found"].astype(bool)]
        lacking = int(own["instance"].isin(mine.index).sum())
    return {"selected": len(mine), "missing": lacking}
