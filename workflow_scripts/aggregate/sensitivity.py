"""The paper's sensitivity studies from the per-run results (DESIGN, "Input conditions and
seeds"; paper Section 5.2, Figure 5, Table 13).

``results`` is `collect`'s table over every run: one row per (model, condition, seed,
instance), only ``ok`` rows scored. An instance's value under a condition is the mean
over its ``ok`` seeds (:func:`average_seeds`); CIs are percentile bootstraps over
instances (`tables.bootstrap`), so a model's CI over seed-averaged instances carries
the seed noise left in those means.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pandas as pd

from workflow_scripts.aggregate.tables import RESAMPLES, SEED, bootstrap
from workflow_scripts.benchmark.instances import select_subset
from workflow_scripts.common.layout import DEFAULT_CONDITION

METRICS = ("completeness", "rubric", "final")
NUMERIC = ("completeness", "rubric", "final", "strict_success", "tier")
CONDITION_TABLES = ("conditions", "conditions_by_task")


def average_seeds(results: pd.DataFrame) -> pd.DataFrame:
    """One row per (model, condition, instance): the scores' means over its ``ok`` seeds.

    ``status`` is ``ok`` when any seed is, else ``error`` when any is, else ``missing``;
    ``seeds_ok`` counts the seeds averaged. A table with one seed per instance comes back
    as it is (plus ``seeds_ok``)."""
    keys = ["model", "condition", "instance"]
    frame = results.assign(seeds_ok=(results["status"] == "ok").astype(int))
    if not frame.duplicated(keys).any():
        return frame
    numeric = frame[list(NUMERIC)].astype(float)
    frame = frame.drop(columns=list(NUMERIC)).join(numeric)
    grouped = frame.groupby(keys, sort=False)
    first = grouped.first().drop(columns=[*NUMERIC, "seeds_ok", "status"])
    status = grouped["status"].agg(
        lambda s: "ok" if (s == "ok").any() else "error" if (s == "error").any() else "missing"
    )
    means = grouped[list(NUMERIC)].mean()
    averaged = first.join(status).join(means).join(grouped["seeds_ok"].sum())
    return averaged.reset_index()[[*frame.columns]]


def seed_variance(results: pd.DataFrame) -> pd.DataFrame:
    """Per model (its main condition): how much of final's variance is the seed's.

    Over the instances with at least two ``ok`` seeds: ``var_seed`` is the mean of the
    instances' between-seed variances (ddof 1), ``var_instance`` the variance of the
    instances' seed means less the seed noise left in them (mean of ``var/k``; at least
    0), ``share_seed``/``share_instance`` each over their sum. ``seeds`` counts the
    model's seeds, ``n`` the instances used, ``final`` their mean of seed means."""
    frame = results[(results["condition"] == DEFAULT_CONDITION) & (results["status"] == "ok")]
    rows = []
    for model in dict.fromkeys(results["model"]):
        own = frame[frame["model"] == model]
        seeds = results.loc[results["model"] == model, "seed"].nunique(dropna=False)
        per = own.groupby("instance", sort=False)["final"].agg(["mean", "var", "count"])
        per = per[per["count"] >= 2]
        row = {"model": model, "seeds": seeds, "n": len(per)}
        if len(per) >= 2:
            var_seed = per["var"].mean()
            var_instance = max(0.0, per["mean"].var() - (per["var"] / per["count"]).mean())
            total = var_seed + var_instance
            row |= {
                "final": per["mean"].mean(),
                "var_seed": var_seed,
                "var_instance": var_instance,
                "share_seed": var_seed / total if total else np.nan,
                "share_instance": var_instance / total if total else np.nan,
            }
        rows.append(row)
    columns = ["model", "seeds", "n", "final", "var_seed", "var_instance"]
    return pd.DataFrame(rows, columns=[*columns, "share_seed", "share_instance"])


def _condition_rows(averaged, keys, seed, resamples) -> pd.DataFrame:
    """Each (model, condition, *keys) cell: the metrics' means and CIs, and the paired
    difference against `default` over the instances scored in both."""
    ok = averaged[averaged["status"] == "ok"]
    default = ok[ok["condition"] == DEFAULT_CONDITION].set_index(["model", "instance"])
    rows = []
    for key, cell in averaged.groupby(["model", "condition", *keys], sort=False):
        values = cell.loc[cell["status"] == "ok", ["instance", *METRICS]].dropna()
        row = dict(zip(["model", "condition", *keys], key, strict=True))
        means = bootstrap(values[list(METRICS)].to_numpy(float), seed, resamples)
        for metric, mean, low, high in zip(METRICS, *means, strict=True):
            row |= {metric: mean, f"{metric}_ci_low": low, f"{metric}_ci_high": high}
        row["n"] = len(values)
        if row["condition"] != DEFAULT_CONDITION:
            base = default.reindex(pd.MultiIndex.from_product([[row["model"]], values["instance"]]))
            paired = values[list(METRICS)].to_numpy(float) - base[list(METRICS)].to_numpy(float)
            paired = paired[~np.isnan(paired).any(axis=1)]
            diffs = bootstrap(paired, seed, resamples)
            for metric, mean, low, high in zip(METRICS, *diffs, strict=True):
                row |= {f"{metric}_diff": mean, f"{metric}_diff_ci_low": low}
                row[f"{metric}_diff_ci_high"] = high
            row["n_paired"] = len(paired)
        rows.append(row)
    stats = [f"{m}{s}" for m in METRICS for s in ("", "_ci_low", "_ci_high")]
    diffs = [f"{m}_diff{s}" for m in METRICS for s in ("", "_ci_low", "_ci_high")]
    columns = ["model", "condition", *keys, *stats, "n", *diffs, "n_paired"]
    table = pd.DataFrame(rows, columns=columns)
    return table.astype({"n_paired": "Int64"})


def conditions(
    results: pd.DataFrame,
    covered: dict[str, Iterable[str]],
    seed: int = SEED,
    resamples: int = RESAMPLES,
) -> dict[str, pd.DataFrame]:
    """`conditions` (per model x condition) and `conditions_by_task` (x task).

    Each condition's rows are over the instances it covers (`covered`: by condition;
    `default`: every instance); the `default` row of a model is over all of its
    instances, and each other condition's ``*_diff`` is the mean paired difference
    condition - default over the instances scored ok in both (``n_paired``), with a
    bootstrap CI over those instances. Seeds are averaged first."""
    averaged = average_seeds(results)
    keep = averaged["condition"] == DEFAULT_CONDITION
    for condition, instances in covered.items():
        keep |= (averaged["condition"] == condition) & averaged["instance"].isin(list(instances))
    averaged = averaged[keep]
    return {
        "conditions": _condition_rows(averaged, [], seed, resamples),
        "conditions_by_task": _condition_rows(averaged, ["task"], seed, resamples),
    }


def subset_stability(
    results: pd.DataFrame, instances: pd.DataFrame, subset_seed: int
) -> pd.DataFrame:
    """Table 13 from a `subset: full` run: per model and level (``avg`` pooled), final
    over the seeded half selection (`select_subset(..., "half", subset_seed)`) and over
    every instance, ``difference`` = half - full, each model's rank by final in both
    (1 best), and ``ranks_agree``: whether the whole ranking is the same at that level.

    ``instances`` has the run's task, level and id by instance (selected.csv)."""
    half = set(select_subset(instances, "half", subset_seed).index)
    main = average_seeds(results[results["condition"] == DEFAULT_CONDITION])
    main = main[main["status"] == "ok"].dropna(subset=["final"])
    frame = pd.concat([main.astype({"level": str}), main.assign(level="avg")])
    frame["half"] = frame["instance"].isin(half)
    rows = []
    for (model, level), cell in frame.groupby(["model", "level"], sort=False):
        in_half = cell[cell["half"]]["final"]
        rows.append(
            {
                "model": model,
                "level": level,
                "final_half": in_half.mean() if len(in_half) else np.nan,
                "n_half": len(in_half),
                "final_full": cell["final"].mean(),
                "n_full": len(cell),
            }
        )
    columns = ["model", "level", "final_half", "n_half", "final_full", "n_full"]
    table = pd.DataFrame(rows, columns=columns)
    table["difference"] = table["final_half"] - table["final_full"]
    by_level = table.groupby("level")
    table["rank_half"] = by_level["final_half"].rank(ascending=False, method="min")
    table["rank_full"] = by_level["final_full"].rank(ascending=False, method="min")
    same = (table["rank_half"] == table["rank_full"]).groupby(table["level"]).transform("all")
    table["ranks_agree"] = same
    return table.astype({"rank_half": "Int64", "rank_full": "Int64"})
