"""The paper's tables from the per-instance results (DESIGN, "Aggregates").

Every table is tidy: ``model`` and its grouping columns, then each value's mean with a
bootstrap 95% CI (``_ci_low``/``_ci_high``) and ``n``, the number of values averaged.
Only ``ok`` instances are averaged (``collect`` leaves the others' scores empty): an
``error`` or ``missing`` one is left out, never counted as 0, and is counted in
:func:`errors`; a cell without any keeps its row, with ``n`` 0 and no mean. Pooled
rows: model ``all`` pools every model's instances (Table 7: ``transitions.pool``'s),
domain ``overall`` every domain's, level ``avg`` every level's: each is the mean over
the pooled instances, not a mean of the cells' means.

CIs are percentile bootstraps of the mean: ``RESAMPLES`` resamples with replacement of
the cell's values (instances; tasks in :func:`overlap_groups`), each cell drawn from
``numpy.random.default_rng(seed)`` afresh, so a cell's CI does not depend on the others.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from workflow_scripts.benchmark.instances import OVERLAP_GROUPS
from workflow_scripts.benchmark.paper import TABLE9_SKILL_TASKS
from workflow_scripts.common.layout import GENERATION_FAILED
from workflow_scripts.transitions.labels import LABELS

SEED = 0
RESAMPLES = 1000
POOLED = ("all", "overall", "avg")
STATUSES = ("ok", "error", "missing")
TABLES = (
    "final_by_domain_level",
    "metrics_by_domain_level",
    "strict_success",
    "skills",
    "overlap_groups",
    "transitions",
    "errors",
)
# VBVR model -> the base model its LoRA was trained on (the published generations' too)
VBVR_PAIRS = {
    "vbvr_wan22": "wan22_i2v_a14b",
    "vbvr_wan21": "wan21_i2v_14b",
    "vbvr_ltx23": "ltx23_i2v",
    "paper_vbvr_wan2_2": "paper_wan2_2_i2v",
}


def bootstrap(values, seed: int = SEED, resamples: int = RESAMPLES):
    """Column means of ``values`` (n rows x k columns) and their 95% percentile CIs."""
    values = np.asarray(values, dtype=float)
    values = values[:, None] if values.ndim == 1 else values
    if not len(values):
        nan = np.full(values.shape[1], np.nan)
        return nan, nan, nan
    draws = np.random.default_rng(seed).integers(0, len(values), (resamples, len(values)))
    means = np.stack([column[draws].mean(axis=1) for column in values.T], axis=1)
    low, high = np.percentile(means, [2.5, 97.5], axis=0)
    return values.mean(axis=0), low, high


def _pool(frame: pd.DataFrame, **labels: str) -> pd.DataFrame:
    """``frame`` plus, for each column named, a copy of it all with that column pooled; the
    models' pool leaves out the rows of a shortcut baseline (``baseline`` true, if given)."""
    for column, label in labels.items():
        pooled = frame
        if column == "model" and "baseline" in frame:
            pooled = frame[~frame["baseline"].astype(bool)]
        frame = pd.concat([frame, pooled.assign(**{column: label})], ignore_index=True)
    return frame


def _rank(column: pd.Series) -> pd.Series:
    """Sort keys: models as they came, groups as OVERLAP_GROUPS, others sorted; pooled last."""
    values = list(dict.fromkeys(column))
    if column.name == "group":
        values.sort(key=OVERLAP_GROUPS.index)
    elif column.name != "model":
        values.sort(key=lambda v: (v in POOLED, v))
    values.sort(key=lambda v: v in POOLED)
    return column.map({v: i for i, v in enumerate(values)})


def _summary(frame: pd.DataFrame, keys: list[str], values: list[str], seed, resamples):
    """One row per group of ``keys``: each value's mean and CI over the rows holding all values."""
    columns = [*keys, *(f"{v}{s}" for v in values for s in ("", "_ci_low", "_ci_high")), "n"]
    rows = []
    for key, cell in frame.groupby(keys, sort=False):
        data = cell[values].astype(float).dropna().to_numpy()
        stats = zip(values, *bootstrap(data, seed, resamples), strict=True)
        row = dict(zip(keys, key, strict=True))
        for value, mean, low, high in stats:
            row |= {value: mean, f"{value}_ci_low": low, f"{value}_ci_high": high}
        rows.append(row | {"n": len(data)})
    return pd.DataFrame(rows, columns=columns).sort_values(keys, key=_rank, ignore_index=True)


def _by_domain_level(results, values, seed, resamples) -> pd.DataFrame:
    frame = _pool(results, level="avg", domain="overall", model="all")
    return _summary(frame, ["model", "domain", "level"], values, seed, resamples)


def final_by_domain_level(results, seed=SEED, resamples=RESAMPLES) -> pd.DataFrame:
    """Table 2: final by model x domain x level, level ``avg`` and domain ``overall`` pooled."""
    return _by_domain_level(results, ["final"], seed, resamples)


def metrics_by_domain_level(results, seed=SEED, resamples=RESAMPLES) -> pd.DataFrame:
    """Table 11: completeness, rubric and final (the mean of the per-instance products)."""
    return _by_domain_level(results, ["completeness", "rubric", "final"], seed, resamples)


def strict_success(results, seed=SEED, resamples=RESAMPLES) -> pd.DataFrame:
    """Table 12: the strict success rate (a fraction) by model x domain x level."""
    return _by_domain_level(results, ["strict_success"], seed, resamples)


def skills(
    results, seed=SEED, resamples=RESAMPLES, tag_tasks: Mapping[str, int] | None = None
) -> pd.DataFrame:
    """Final per skill tag: an instance of a task with k tags counts in k pools.

    `tag_tasks` (the taxonomy's task count per tag) adds `tasks`, `paper_tasks` (the paper's
    Table 9) and a one-line `note` where the two differ: the tags are the release's."""
    frame = _pool(results.explode("skills").rename(columns={"skills": "skill"}), model="all")
    table = _summary(frame, ["model", "skill"], ["final"], seed, resamples)
    if tag_tasks is not None:
        table["tasks"] = table["skill"].map(tag_tasks).astype("Int64")
        table["paper_tasks"] = table["skill"].map(TABLE9_SKILL_TASKS).astype("Int64")
        table["note"] = [
            f"the release's task_names.yaml tags {tasks} tasks {skill}, the paper's Table 9 "
            f"counts {paper}: the release's tags are used"
            if pd.notna(tasks) and pd.notna(paper) and tasks != paper
            else ""
            for skill, tasks, paper in zip(
                table["skill"], table["tasks"], table["paper_tasks"], strict=True
            )
        ]
    return table


def _task_means(results: pd.DataFrame) -> pd.DataFrame:
    """Final per model x group x level (``avg`` pooled) x task, with its instance count."""
    frame = _pool(results.rename(columns={"overlap_group": "group"}), level="avg")
    keys = ["model", "group", "level", "task"]
    return frame.groupby(keys, sort=False)["final"].agg(["mean", "count"]).reset_index()


def overlap_groups(
    results, pairs: Mapping[str, str] = VBVR_PAIRS, seed=SEED, resamples=RESAMPLES
) -> pd.DataFrame:
    """Tables 5/6: final per model x VBVR-overlap group x level, as a mean of task means.

    ``n`` counts the tasks averaged, ``n_instances`` their instances; CIs resample tasks.
    For each (VBVR model, base model) of ``pairs`` with both in the run, the VBVR rows
    carry ``base`` and ``delta`` = VBVR - base, the mean over the tasks scored for both
    of their paired task-mean differences (CI: tasks resampled; ``delta_n`` tasks).
    No pooled model: the groups compare models.
    """
    tasks = _task_means(results).rename(columns={"mean": "final"})
    keys = ["model", "group", "level"]
    table = _summary(tasks, keys, ["final"], seed, resamples)
    counts = tasks.groupby(keys, sort=False)["count"].sum().rename("n_instances")
    table = table.merge(counts.reset_index(), on=keys)
    on, paired = ["group", "level", "task"], [pd.DataFrame(columns=[*keys, "base", "delta"])]
    for vbvr, base in pairs.items():
        if {vbvr, base} <= set(tasks["model"]):
            both = tasks[tasks.model == vbvr].merge(tasks[tasks.model == base], on=on)
            paired.append(both.assign(model=vbvr, base=base, delta=both.final_x - both.final_y))
    deltas = _summary(pd.concat(paired), [*keys, "base"], ["delta"], seed, resamples)
    table = table.merge(deltas.rename(columns={"n": "delta_n"}), on=keys, how="left")
    return table.astype({"delta_n": "Int64"})


def transitions(
    pairs: pd.DataFrame, pool: Sequence[str], seed=SEED, resamples=RESAMPLES
) -> pd.DataFrame:
    """Table 7: per model and step pair, the percentage of each label (they sum to 100).

    An instance whose labelling failed for any pair (``transitions_status`` ``error``)
    leaves every pair of its model, so that a model's step pairs are over the same
    instances; model ``all`` pools the models of ``pool`` (none: no ``all`` rows).
    """
    unknown = set(pairs["label"]) - set(LABELS)
    if unknown:
        raise ValueError(f"unknown transition labels {sorted(map(str, unknown))}")
    kept = pairs[pairs["transitions_status"] != "error"]
    frame = pd.concat([kept, kept[kept["model"].isin(pool)].assign(model="all")])
    frame = frame.reset_index(drop=True)
    shares = pd.get_dummies(frame["label"]).reindex(columns=list(LABELS), fill_value=0) * 100.0
    frame = pd.concat([frame[["model", "from", "to"]], shares], axis=1)
    table = _summary(frame, ["model", "from", "to"], list(LABELS), seed, resamples)
    table.insert(1, "step_pair", table.pop("from").astype(str) + "→" + table.pop("to").astype(str))
    return table


def errors(results: pd.DataFrame) -> pd.DataFrame:
    """Instances selected per model, and how many are ok, error, missing (scores, transitions);
    ``transitions_failed`` lists the instances whose labelling failed (left out of Table 7;
    ``model/instance`` in the ``all`` row)."""
    frame = _pool(results, model="all")
    models = pd.unique(frame["model"])

    def count(column: str) -> pd.DataFrame:
        table = pd.crosstab(frame["model"], frame[column])
        return table.reindex(index=models, columns=list(STATUSES), fill_value=0)

    scores, labels = count("status"), count("transitions_status").add_prefix("transitions_")
    table = pd.concat([scores.sum(axis=1).rename("selected"), scores, labels], axis=1)
    table = table.rename_axis("model").reset_index().rename_axis(columns=None)
    failed = results[results["transitions_status"] == "error"]
    listed = failed.groupby("model")["instance"].agg(" ".join)
    listed["all"] = " ".join(failed["model"] + "/" + failed["instance"])
    table["transitions_failed"] = table["model"].map(listed).fillna("")
    # no video made (a video API's refusal or failure): counted within `error`
    unmade = frame["reason"].fillna("").str.startswith(GENERATION_FAILED)
    table["generation_failed"] = table["model"].map(frame[unmade].groupby("model").size())
    table["generation_failed"] = table["generation_failed"].fillna(0).astype(int)
    return table


def all_tables(
    results: pd.DataFrame,
    pairs: pd.DataFrame,
    vbvr_pairs: Mapping[str, str] = VBVR_PAIRS,
    pool: Sequence[str] = (),
    seed: int = SEED,
    resamples: int = RESAMPLES,
    tag_tasks: Mapping[str, int] | None = None,
) -> dict[str, pd.DataFrame]:
    """Every table of DESIGN's contract by its file name (``TABLES``, without ``.csv``);
    `tag_tasks`: the taxonomy's task count per skill tag (`skills`)."""
    return {
        "final_by_domain_level": final_by_domain_level(results, seed, resamples),
        "metrics_by_domain_level": metrics_by_domain_level(results, seed, resamples),
        "strict_success": strict_success(results, seed, resamples),
        "skills": skills(results, seed, resamples, tag_tasks),
        "overlap_groups": overlap_groups(results, vbvr_pairs, seed, resamples),
        "transitions": transitions(pairs, pool, seed, resamples),
        "errors": errors(results),
    }
