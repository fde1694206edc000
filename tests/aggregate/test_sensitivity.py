"""The sensitivity tables (seeds, input conditions, half against full) on results worked
out by hand, and the documents of every run read from where `common.layout` puts them."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from workflow_scripts.aggregate import sensitivity
from workflow_scripts.aggregate.collect import collect
from workflow_scripts.common import layout


def row(model, instance, final, condition="default", seed=0, status="ok", task="t1", level=1):
    scored = status == "ok"
    return {
        "model": model,
        "instance": instance,
        "task": task,
        "level": level,
        "domain": "d",
        "skills": ("s",),
        "overlap_group": "unassigned",
        "status": status,
        "reason": None,
        "completeness": 1.0 if scored else np.nan,
        "rubric": final if scored else np.nan,
        "final": final if scored else np.nan,
        "strict_success": (final == 1.0) if scored else pd.NA,
        "tier": 2.0 if scored else np.nan,
        "transitions_status": "ok",
        "condition": condition,
        "seed": seed,
    }


def frame(rows):
    table = pd.DataFrame(rows)
    table["strict_success"] = table["strict_success"].astype("boolean")
    return table


# Model A, 3 instances x 2 seeds: finals (0.2, 0.4), (0.6, 0.6), (1.0, 0.8)
SEEDS = frame(
    [
        row("A", i, f, seed=s)
        for i, finals in (("i1", (0.2, 0.4)), ("i2", (0.6, 0.6)), ("i3", (1.0, 0.8)))
        for s, f in zip((0, 1), finals, strict=True)
    ]
)


def test_seeds_are_averaged_per_instance_and_their_variance_split_from_the_instances():
    averaged = sensitivity.average_seeds(SEEDS)
    assert averaged["final"].round(6).tolist() == [0.3, 0.6, 0.9]
    assert averaged["seeds_ok"].tolist() == [2, 2, 2]
    assert averaged["strict_success"].tolist() == [0.0, 0.0, 0.5]

    table = sensitivity.seed_variance(SEEDS).set_index("model")
    # within-instance variances (ddof 1): 0.02, 0, 0.02 -> mean 0.04/3
    var_seed = 0.04 / 3
    # seed means 0.3, 0.6, 0.9: variance 0.09, less the seed noise left in a mean of 2
    var_instance = 0.09 - var_seed / 2
    got = table.loc["A"]
    assert (got.seeds, got.n) == (2, 3)
    assert got.var_seed == pytest.approx(var_seed)
    assert got.var_instance == pytest.approx(var_instance)
    assert got.share_seed == pytest.approx(var_seed / (var_seed + var_instance))
    assert got.share_seed + got.share_instance == pytest.approx(1.0)
    assert got.final == pytest.approx(0.6)


def test_an_error_seed_is_left_out_of_its_instance_mean():
    rows = frame([row("A", "i1", 0.2, seed=0), row("A", "i1", None, seed=1, status="error")])
    averaged = sensitivity.average_seeds(rows)
    assert averaged[["status", "final", "seeds_ok"]].values.tolist() == [["ok", 0.2, 1]]
    failed = frame([row("A", "i1", None, seed=s, status="error") for s in (0, 1)])
    assert sensitivity.average_seeds(failed)["status"].tolist() == ["error"]


def test_conditions_are_over_their_instances_with_a_paired_difference_against_default():
    rows = [row("A", i, f, task=t) for i, f, t in (("i1", 0.2, "t1"), ("i2", 0.4, "t1"))]
    rows += [row("A", "i3", 1.0, task="t2")]
    rows += [row("A", "i1", 0.8, "oracle"), row("A", "i2", 0.6, "oracle", seed=0)]
    rows += [row("A", "i2", 1.0, "oracle", seed=1)]  # i2 under oracle: mean of 0.6 and 1.0
    rows += [row("A", "i3", 0.5, "oracle", task="t2")]  # not covered by oracle: left out
    tables = sensitivity.conditions(frame(rows), {"oracle": ["i1", "i2"]}, resamples=200)
    table = tables["conditions"].set_index(["model", "condition"])
    default, oracle = table.loc[("A", "default")], table.loc[("A", "oracle")]
    assert default.n == 3
    assert default.final == pytest.approx(1.6 / 3) and pd.isna(default.final_diff)
    assert (oracle.n, oracle.n_paired) == (2, 2)
    assert oracle.final == pytest.approx(0.8)  # (0.8 + 0.8) / 2
    assert oracle.final_diff == pytest.approx(0.5)  # ((0.8-0.2) + (0.8-0.4)) / 2
    assert oracle.final_diff_ci_low <= 0.5 <= oracle.final_diff_ci_high
    assert oracle.completeness_diff == 0.0
    assert tables["conditions"].columns[:2].tolist() == ["model", "condition"]

    by_task = tables["conditions_by_task"].set_index(["model", "condition", "task"])
    assert by_task.loc[("A", "default", "t2")].final == 1.0
    assert ("A", "oracle", "t2") not in by_task.index
    assert by_task.loc[("A", "oracle", "t1")].final_diff == pytest.approx(0.5)


def test_subset_stability_sets_the_half_selection_beside_the_full_set():
    ids = [f"t1_lv1_{n:03d}" for n in range(1, 5)]
    instances = pd.DataFrame(
        {"task": "t1", "level": 1, "id": [i.rsplit("_", 1)[1] for i in ids]}, index=ids
    )
    half = set(sensitivity.select_subset(instances, "half", 0).index)
    finals = {"A": [0.1, 0.2, 0.3, 0.4], "B": [0.5, 0.5, 0.5, 0.5]}
    rows = frame([row(m, i, f) for m, fs in finals.items() for i, f in zip(ids, fs, strict=True)])
    table = sensitivity.subset_stability(rows, instances, 0)
    got = table[table.level == "avg"].set_index("model")
    mean_half = np.mean([f for i, f in zip(ids, finals["A"], strict=True) if i in half])
    assert got.loc["A"].final_half == pytest.approx(mean_half)
    assert got.loc["A"].final_full == pytest.approx(0.25)
    assert got.loc["A"].difference == pytest.approx(mean_half - 0.25)
    assert (got.loc["A"].n_half, got.loc["A"].n_full) == (2, 4)
    assert got["rank_full"].tolist() == [2, 1] and bool(got.loc["B"].ranks_agree)
    assert set(table.level) == {"1", "avg"}


def test_collect_reads_every_run_under_its_key(tmp_path):
    instances = pd.DataFrame(
        {
            "task": ["t1", "t1"],
            "level": [1, 1],
            "domain": "d",
            "skills": [("s",), ("s",)],
            "overlap_group": "unassigned",
        },
        index=pd.Index(["t1_lv1_001", "t1_lv1_002"], name="instance"),
    )
    runs = {
        "A": {"model": "A", "condition": "default", "seed": 0},
        "A@seed3": {"model": "A", "condition": "default", "seed": 3},
        "A@lineart": {"model": "A", "condition": "lineart", "seed": 0, "instances": ["t1_lv1_002"]},
    }
    for key, final in (("A", 0.5), ("A@seed3", 0.25), ("A@lineart", 1.0)):
        for instance in instances.index:
            path = layout.score_file(tmp_path, key, "t1", instance)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps({"status": "ok", "final": final, "completeness": 1.0}))
    results, _ = collect(instances, ["A"], tmp_path, transitions=False, runs=runs)
    got = results.set_index(["condition", "seed", "instance"])["final"]
    assert got.to_dict() == {
        ("default", 0, "t1_lv1_001"): 0.5,
        ("default", 0, "t1_lv1_002"): 0.5,
        ("default", 3, "t1_lv1_001"): 0.25,
        ("default", 3, "t1_lv1_002"): 0.25,
        ("lineart", 0, "t1_lv1_002"): 1.0,
    }
    assert set(results["model"]) == {"A"}


@pytest.mark.parametrize(
    "key, parsed",
    [
        ("tiny_wan22", ("tiny_wan22", "default", None)),
        ("tiny_wan22@seed3", ("tiny_wan22", "default", 3)),
        ("tiny_wan22@lineart", ("tiny_wan22", "lineart", None)),
        ("tiny_wan22@lineart@seed3", ("tiny_wan22", "lineart", 3)),
    ],
)
def test_run_keys_round_trip(key, parsed):
    assert layout.parse_run_key(key) == parsed
    assert layout.run_key(*parsed) == key
