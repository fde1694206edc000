"""Trusting the judge: preference pairs merged, and a small case whose AUC and pairwise
accuracy were computed by hand (the numbers in the comments)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from workflow_scripts.aggregate import reliability as rel

I1, I2, I3 = "sorting_lv1_001", "clock_running_lv1_001", "maze_square_lv1_001"
# final = 1 / (q + 1) for a judge quality q (0..4), as the scripted judge of the workflow
# test gives it: q 0 -> 1, 1 -> 0.5, 2 -> 1/3, 3 -> 0.25, 4 -> 0.2
QUALITY = {
    I1: {"A": 0, "B": 1, "C": 1, "D": 4},
    I2: {"A": 2, "B": 0, "C": 4, "D": 3},
    I3: {"A": 3, "B": 2, "C": 2, "D": 0},
}
# Two annotators. I1: A > B (both), A > C (given as C < A), B = C, and A against D
# contradicted (dropped). I2: B > A, C > A, B = C. I3: A > B > C > A a cycle (all three
# dropped) and D > A, which is on no cycle (kept).
PREFERENCES = [
    (I1, "A", "B", "a", "ann1"),
    (I1, "A", "B", "a", "ann2"),
    (I1, "C", "A", "b", "ann1"),
    (I1, "B", "C", "tie", "ann2"),
    (I1, "A", "D", "a", "ann1"),
    (I1, "D", "A", "a", "ann2"),
    (I2, "A", "B", "b", "ann1"),
    (I2, "A", "C", "b", "ann2"),
    (I2, "C", "B", "tie", "ann1"),
    (I3, "A", "B", "a", "ann1"),
    (I3, "B", "C", "a", "ann2"),
    (I3, "C", "A", "a", "ann1"),
    (I3, "A", "D", "b", "ann2"),
]
TAXONOMY = {  # the example benchmark's tasks
    I1: ("visual_organization", ["attribute_grounding", "planning"]),
    I2: ("spatiotemporal_dynamics", ["temporal"]),
    I3: ("structured_puzzles", ["planning"]),
}


def hand_case():
    pairs, dropped = rel.merge_pairs(pd.DataFrame(PREFERENCES, columns=rel.PAIR_COLUMNS))
    finals = pd.DataFrame(
        [
            ["main", model, instance, 1 / (q + 1)]
            for instance, models in QUALITY.items()
            for model, q in models.items()
        ],
        columns=["judge", "model", "instance", "final"],
    )
    instances = pd.DataFrame(
        {"domain": [d for d, _ in TAXONOMY.values()], "skills": [s for _, s in TAXONOMY.values()]},
        index=list(TAXONOMY),
    )
    return pairs, dropped, finals, instances


def test_merging_drops_contradictions_and_cycles_and_keeps_ties():
    pairs, dropped, _, _ = hand_case()
    assert dropped == {"contradictions": 1, "cycles": 3}
    got = {
        (i, a, b): p
        for i, a, b, p in pairs[["instance", "model_a", "model_b", "preferred"]].to_numpy()
    }
    assert got == {
        (I1, "A", "B"): "a",
        (I1, "A", "C"): "a",
        (I1, "B", "C"): "tie",
        (I2, "A", "B"): "b",
        (I2, "A", "C"): "b",
        (I2, "B", "C"): "tie",
        (I3, "A", "D"): "b",
    }
    assert (
        pairs.set_index(["instance", "model_a", "model_b"]).loc[(I1, "A", "B"), "n_annotators"] == 2
    )


def test_hand_computed_auc_and_pairwise_accuracy():
    """d = final(a) - final(b), predictions with the 0.05 tie band:
    I1 A-B +0.5 a (right), A-C +0.5 a (right), B-C 0 tie (right);
    I2 A-B -2/3 b (right), A-C +2/15 a (wrong: b), B-C +0.8 a (wrong: tie);
    I3 A-D -0.75 b (right).  Accuracy 5/7.
    Strict d_i = final(preferred) - final(other): 0.5, 0.5, 2/3, -2/15, 0.75; positives
    (d_i, 1) against negatives (-d_i, 0): every positive above all five negatives except
    -2/15, which is above four (not above +2/15): AUC = 24/25 = 0.96."""
    pairs, _, finals, instances = hand_case()
    overall, by_slice = rel.reliability_tables(pairs, finals, instances, ["main"])
    row = overall.iloc[0]
    assert list(overall.columns) == ["judge", *rel.METRICS]
    assert row["judge"] == "main"
    assert row["pairwise_accuracy"] == pytest.approx(5 / 7)
    assert row["auc"] == pytest.approx(0.96)
    assert (row["n_pairs"], row["n_strict_pairs"]) == (7, 5)
    assert row["auc_lo"] <= row["auc"] <= row["auc_hi"]
    assert row["pairwise_accuracy_lo"] <= row["pairwise_accuracy"] <= row["pairwise_accuracy_hi"]

    # Per slice: I2 alone (spatiotemporal_dynamics, temporal): accuracy 1/3, strict d_i 2/3
    # and -2/15: 2/3 above both negatives, -2/15 above -2/3 only: AUC 3/4. planning pools
    # I1 and I3 (sorting has two tags, counted in both pools): all 4 right, AUC 1.
    table = by_slice.set_index(["slice_kind", "slice"])
    expected = {
        ("domain", "spatiotemporal_dynamics"): (1 / 3, 0.75, 3, 2),
        ("domain", "structured_puzzles"): (1.0, 1.0, 1, 1),
        ("domain", "visual_organization"): (1.0, 1.0, 3, 2),
        ("skill", "attribute_grounding"): (1.0, 1.0, 3, 2),
        ("skill", "planning"): (1.0, 1.0, 4, 3),
        ("skill", "temporal"): (1 / 3, 0.75, 3, 2),
    }
    assert set(table.index) == set(expected)
    for key, (accuracy, auc, n, strict) in expected.items():
        got = table.loc[key]
        assert got["pairwise_accuracy"] == pytest.approx(accuracy), key
        assert got["auc"] == pytest.approx(auc), key
        assert (got["n_pairs"], got["n_strict_pairs"]) == (n, strict), key
        # one instance in the pool: every resample is the pool itself
        if key[1] != "planning":
            assert got["auc_lo"] == pytest.approx(auc) and got["auc_hi"] == pytest.approx(auc)


def test_the_bootstraps_auc_is_roc_auc_score():
    rng = np.random.default_rng(3)
    d = np.round(rng.normal(0.1, 0.3, 40), 2)  # ties among the scores too
    from sklearn.metrics import roc_auc_score

    truth = np.r_[np.ones(40), np.zeros(40)]
    assert rel.auc(d) == pytest.approx(roc_auc_score(truth, np.r_[d, -d]))


def test_the_tie_band_is_not_moved_by_float_noise():
    assert list(rel.predicted([0.25 - 0.2, 0.049, -0.05, 0.0, -0.3])) == [
        "a",
        "tie",
        "b",
        "tie",
        "b",
    ]


def test_rankings_become_pairs_per_annotator_and_skips_give_none():
    rankings = pd.DataFrame(
        [
            [I1, "ann1", "B", 1],
            [I1, "ann1", "A", 2],
            [I1, "ann1", "C", 2],
            [I1, "ann2", "A", None],  # skipped
            [I1, "ann2", "B", None],
            [I1, "ann2", "C", None],
        ],
        columns=rel.RANKING_COLUMNS,
    )
    pairs = rel.ranking_pairs(rankings)
    assert pairs.values.tolist() == [
        [I1, "A", "B", "b", "ann1"],
        [I1, "A", "C", "tie", "ann1"],
        [I1, "B", "C", "a", "ann1"],
    ]


def test_judge_against_judge():
    """Judge y reverses main's order on I1 (A 1.0, B 0.5, C 0.5 against 0.2, 0.25, 0.25):
    Spearman -1; model pairs: A-B a/b, A-C a/b, B-C tie/tie: agreement 1/3."""
    _, _, finals, instances = hand_case()
    finals = finals[finals["instance"] == I1].query("model != 'D'")
    other = finals.assign(judge="y", final=1 / (5 - finals["final"].rdiv(1).sub(1)))
    overall, by_slice = rel.agreement_tables(pd.concat([finals, other]), instances, ["main", "y"])
    row = overall.iloc[0]
    assert list(overall.columns) == [
        "judge_a",
        "judge_b",
        "spearman",
        "kendall",
        "pairwise_agreement",
        "n",
    ]
    assert (row["judge_a"], row["judge_b"], row["n"]) == ("main", "y", 3)
    assert row["spearman"] == pytest.approx(-1.0) and row["kendall"] == pytest.approx(-1.0)
    assert row["pairwise_agreement"] == pytest.approx(1 / 3)
    temporal = by_slice.set_index(["slice_kind", "slice"]).loc[("skill", "temporal")]
    assert temporal["n"] == 0 and np.isnan(temporal["pairwise_agreement"])


def test_a_preferences_file_with_a_bad_label_is_named(tmp_path):
    path = tmp_path / "prefs.csv"
    path.write_text("instance,model_a,model_b,preferred,annotator\nx,A,B,left,ann1\n")
    with pytest.raises(rel.PreferenceError, match="line 2: preferred must be a, b or tie"):
        rel.read_preferences(path)
    path.write_text("instance,model_a,preferred\nx,A,a\n")
    with pytest.raises(rel.PreferenceError, match="no column.*model_b, annotator"):
        rel.read_preferences(path)
