"""The paper's tables and plots on a synthetic run whose every figure is worked out by hand.

The run (score.json and transitions documents written where `common.layout` puts them):

    task  domain  skills               group        instances (level: ids)
    t1    dA      planning, spatial    overlap      lv1: 001, 002 lv2: 001
    t2    dA      planning             overlap      lv1: 001
    t3    dB      temporal             non_overlap  lv1: 001      lv2: 001, 002

    instance    M = wan22_i2v_a14b (base)     V = vbvr_wan22
                compl  rubric final strict    compl  rubric final strict
    t1_lv1_001  1.0    0.5    0.5   -         1.0    1.0    1.0   yes
    t1_lv1_002  0.5    1.0    0.5   -         1.0    0.5    0.5   -
    t1_lv2_001  1.0    1.0    1.0   yes       1.0    1.0    1.0   yes
    t2_lv1_001  error                         1.0    1.0    1.0   yes
    t3_lv1_001  0.0    0.25   0.0   -         0.5    0.5    0.25  -
    t3_lv2_001  1.0    0.75   0.75  -         0.0    1.0    0.0   -
    t3_lv2_002  missing                       1.0    0.75   0.75  -

A third model, L = ltx23_i2v, has no results at all (every instance missing).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
import yaml

from tests.support.workflow import REPO
from workflow_scripts.aggregate import plots, tables
from workflow_scripts.aggregate.collect import collect, instance_table
from workflow_scripts.aggregate.jobs import tables_job
from workflow_scripts.aggregate.plots import plots_job
from workflow_scripts.aggregate.vs_paper import vs_paper
from workflow_scripts.common import layout
from workflow_scripts.judge import drift

M, V, L = "wan22_i2v_a14b", "vbvr_wan22", "ltx23_i2v"
TASKS = {"t1": "dA", "t2": "dA", "t3": "dB"}
INSTANCES = ["t1_lv1_001", "t1_lv1_002", "t1_lv2_001", "t2_lv1_001", "t3_lv1_001"]
INSTANCES += ["t3_lv2_001", "t3_lv2_002"]


REPLIED = "gemini-3-flash-preview-2026-01"  # the version every reply of the run reported


def ok(completeness, rubric, strict=False):
    tier = int(completeness * 2)
    final = completeness * rubric
    return {
        "status": "ok",
        "tier": tier,
        "completeness": completeness,
        "rubric": rubric,
        "final": final,
        "strict_success": strict,
        "model_version": REPLIED,
    }


ERROR = {"status": "error", "reason": "judge call failed", "final": None}
SCORES = {
    M: {
        "t1_lv1_001": ok(1.0, 0.5),
        "t1_lv1_002": ok(0.5, 1.0),
        "t1_lv2_001": ok(1.0, 1.0, strict=True),
        "t2_lv1_001": ERROR,
        "t3_lv1_001": ok(0.0, 0.25),
        "t3_lv2_001": ok(1.0, 0.75),
    },
    V: {
        "t1_lv1_001": ok(1.0, 1.0, strict=True),
        "t1_lv1_002": ok(1.0, 0.5),
        "t1_lv2_001": ok(1.0, 1.0, strict=True),
        "t2_lv1_001": ok(1.0, 1.0, strict=True),
        "t3_lv1_001": ok(0.5, 0.5),
        "t3_lv2_001": ok(0.0, 1.0),
        "t3_lv2_002": ok(1.0, 0.75),
    },
}


def labelled(*pairs, status="ok"):
    return {
        "status": status,
        "model_version": REPLIED,
        "pairs": [
            {"from": a, "to": b, "label": label, "source": source, "evidence": "..."}
            for a, b, label, source in pairs
        ],
    }


TRANSITIONS = {
    M: {
        "t1_lv1_001": labelled(
            (1, 2, "unrecognizable", "vlm"),
            (2, 10, "wrong_to_correct", "vlm"),
            (10, 40, "stable", "vlm"),
        ),
        "t1_lv1_002": labelled((1, 2, "unrecognizable", "vlm"), (2, 10, "stable", "vlm")),
        # the 2→10 call failed: its pair is not listed, 1→2 still counts
        "t1_lv2_001": labelled((1, 2, "stable", "vlm"), status="error"),
        "t3_lv1_001": labelled((1, 2, "stable", "vlm"), (2, 10, "correct_to_wrong", "vlm")),
    },
    V: {
        "t1_lv1_001": labelled((1, 2, "unrecognizable", "vlm"), (2, 10, "wrong_to_wrong", "vlm")),
        "t2_lv1_001": labelled((1, 2, "stable", "human"), (2, 10, "stable", "vlm")),
    },
}


def write_run(root: Path) -> Path:
    """The run's files under `root`; returns its outdir."""
    (root / "taxonomy.yaml").write_text(
        yaml.safe_dump(
            {"dA": {"t1": ["planning", "spatial"], "t2": ["planning"]}, "dB": {"t3": ["temporal"]}}
        )
    )
    (root / "overlap.yaml").write_text(
        yaml.safe_dump({"overlap": ["t1", "t2"], "non_overlap": ["t3"]})
    )
    selected = pd.Series(INSTANCES, name="instance").str.extract(
        r"^(?P<task>.+)_lv(?P<level>\d+)_(?P<id>.+)$"
    )
    selected.insert(0, "instance", INSTANCES)
    selected.to_csv(root / "selected.csv", index=False)
    outdir = root / "results"
    for where, documents in ((layout.score_file, SCORES), (layout.transitions_file, TRANSITIONS)):
        for model, by_instance in documents.items():
            for instance, document in by_instance.items():
                path = where(outdir, model, instance[:2], instance)
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(json.dumps(document))
    return outdir


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    root = tmp_path_factory.mktemp("run")
    outdir = write_run(root)
    instances = instance_table(root / "selected.csv", root / "taxonomy.yaml", root / "overlap.yaml")
    results, pairs = collect(instances, [M, V, L], outdir)
    return SimpleNamespace(root=root, outdir=outdir, results=results, pairs=pairs)


@pytest.fixture(scope="module")
def built(run):
    return tables.all_tables(run.results, run.pairs, pool=(M, V))


def cell(table: pd.DataFrame, **keys) -> pd.Series:
    """The one row of `table` matching `keys`."""
    rows = table[np.logical_and.reduce([table[k] == v for k, v in keys.items()])]
    assert len(rows) == 1, (keys, rows)
    return rows.iloc[0]


def test_collect_one_row_per_model_and_instance(run):
    r = run.results.set_index(["model", "instance"])
    assert len(r) == 3 * 7
    assert r.loc[(M, "t1_lv1_001"), ["task", "level", "domain", "overlap_group"]].tolist() == [
        "t1",
        1,
        "dA",
        "overlap",
    ]
    assert r.loc[(M, "t1_lv1_001"), "skills"] == ("planning", "spatial")
    assert r.loc[(M, "t2_lv1_001"), ["status", "reason"]].tolist() == ["error", "judge call failed"]
    assert r.loc[(M, "t3_lv2_002"), "status"] == "missing"
    assert (r.loc[L, "status"] == "missing").all()
    assert r.loc[(M, "t2_lv1_001"), ["completeness", "rubric", "final"]].isna().all()  # not 0
    assert r.loc[(M, "t1_lv2_001"), "transitions_status"] == "error"
    # every listed pair, the error document's too (M: 3 + 2 + 1 + 2, V: 2 + 2)
    assert len(run.pairs) == 12
    assert set(run.pairs.columns) >= {"model", "instance", "task", "domain", "step_pair", "source"}
    human = run.pairs[run.pairs.source == "human"]
    assert human[["model", "instance", "step_pair", "label"]].values.tolist() == [
        [V, "t2_lv1_001", "1→2", "stable"]
    ]


def test_final_by_domain_level(built):
    t = built["final_by_domain_level"]
    expected = {
        # M: dA lv1 = (0.5 + 0.5) / 2 (t2 error left out); avg pools dA's instances:
        # (0.5 + 0.5 + 1.0) / 3 = 2/3, not the mean of level means (0.5 + 1.0) / 2 = 0.75
        (M, "dA", 1): (0.5, 2),
        (M, "dA", 2): (1.0, 1),
        (M, "dA", "avg"): (2 / 3, 3),
        (M, "dB", 1): (0.0, 1),
        (M, "dB", 2): (0.75, 1),
        (M, "dB", "avg"): (0.375, 2),
        # overall: lv1 (0.5 + 0.5 + 0) / 3; lv2 (1 + 0.75) / 2; avg 2.75 / 5
        (M, "overall", 1): (1 / 3, 3),
        (M, "overall", 2): (0.875, 2),
        (M, "overall", "avg"): (0.55, 5),
        # V: dA lv1 (1 + 0.5 + 1) / 3; dA avg 3.5 / 4; dB avg (0.25 + 0 + 0.75) / 3
        (V, "dA", 1): (2.5 / 3, 3),
        (V, "dA", "avg"): (0.875, 4),
        (V, "dB", "avg"): (1 / 3, 3),
        (V, "overall", "avg"): (4.5 / 7, 7),
        # pooled models: dA lv1 (1.0 + 2.5) / 5; overall avg (2.75 + 4.5) / 12
        ("all", "dA", 1): (0.7, 5),
        ("all", "overall", "avg"): (7.25 / 12, 12),
    }
    for (model, domain, level), (mean, n) in expected.items():
        row = cell(t, model=model, domain=domain, level=level)
        assert (row.final, row.n) == (pytest.approx(mean), n), (model, domain, level)
    # a model without results: every cell present, n 0 and no mean (a gap, not a zero)
    assert (t[t.model == L].n == 0).all() and t[t.model == L].final.isna().all()
    assert len(t[t.model == L]) == len(t[t.model == M]) == 9  # 3 domains x (levels + avg)
    assert t.model.unique().tolist() == [M, V, L, "all"]
    assert t[t.model == M].level.tolist() == [1, 2, "avg"] * 3
    assert t[t.model == M].domain.unique().tolist() == ["dA", "dB", "overall"]


def test_a_shortcut_baseline_is_tabled_but_not_pooled(run):
    results = run.results.assign(baseline=run.results["model"] == V)  # V as a baseline
    t = tables.final_by_domain_level(results)
    assert cell(t, model=V, domain="overall", level="avg").final == pytest.approx(4.5 / 7)
    pooled = cell(t, model="all", domain="overall", level="avg")  # M's alone
    assert (pooled.final, pooled.n) == (pytest.approx(0.55), 5)


def test_metrics_are_means_of_per_instance_values(built):
    t = built["metrics_by_domain_level"]
    row = cell(t, model=M, domain="dA", level=1)
    # (1, 0.5) and (0.5, 1): completeness 0.75, rubric 0.75, final mean(0.5, 0.5) = 0.5,
    # not the product of the means 0.5625
    assert (row.completeness, row.rubric, row.final, row.n) == (0.75, 0.75, 0.5, 2)
    assert row.final != row.completeness * row.rubric
    row = cell(t, model=V, domain="dB", level=2)  # (0, 1) and (1, 0.75)
    assert (row.completeness, row.rubric, row.final) == (0.5, 0.875, 0.375)
    pd.testing.assert_series_equal(t.final, built["final_by_domain_level"].final)


def test_strict_success(built):
    t = built["strict_success"]
    expected = {
        (M, "dA", 1): (0.0, 2),
        (M, "dA", 2): (1.0, 1),
        (M, "overall", "avg"): (1 / 5, 5),
        (V, "dA", 1): (2 / 3, 3),
        (V, "overall", "avg"): (3 / 7, 7),
        ("all", "overall", "avg"): (4 / 12, 12),
    }
    for (model, domain, level), (rate, n) in expected.items():
        row = cell(t, model=model, domain=domain, level=level)
        assert (row.strict_success, row.n) == (pytest.approx(rate), n)


def test_skills_count_a_task_in_each_of_its_pools(built):
    t = built["skills"]
    expected = {
        # t1 (planning, spatial) counts in both; t2 (planning) is M's error
        (M, "planning"): (2 / 3, 3),
        (M, "spatial"): (2 / 3, 3),
        (M, "temporal"): (0.375, 2),
        (V, "planning"): (0.875, 4),
        (V, "spatial"): (2.5 / 3, 3),
        (V, "temporal"): (1 / 3, 3),
        ("all", "planning"): (5.5 / 7, 7),
        (L, "planning"): (np.nan, 0),
    }
    for (model, skill), (mean, n) in expected.items():
        row = cell(t, model=model, skill=skill)
        assert (row.final, row.n) == (pytest.approx(mean, nan_ok=True), n)


def test_overlap_groups_average_task_means_and_pair_vbvr_with_base(built):
    t = built["overlap_groups"]
    # V overlap avg: task means t1 (1 + 0.5 + 1) / 3 = 5/6 and t2 1.0 -> 11/12, not the
    # pooled 3.5 / 4; lv1: t1 0.75, t2 1.0 -> 0.875
    row = cell(t, model=V, group="overlap", level="avg")
    assert (row.final, row.n, row.n_instances) == (pytest.approx(11 / 12), 2, 4)
    assert cell(t, model=V, group="overlap", level=1).final == 0.875
    # M overlap avg: t1 2/3 only (t2 error); its CI collapses on one task
    row = cell(t, model=M, group="overlap", level="avg")
    assert (row.final, row.n, row.final_ci_low, row.final_ci_high) == (
        pytest.approx(2 / 3),
        1,
        row.final,
        row.final,
    )
    assert pd.isna(row.base) and pd.isna(row.delta)
    # delta over the tasks scored for both: overlap avg t1 5/6 - 2/3 = 1/6 (not 11/12 - 2/3);
    # overlap lv1 0.75 - 0.5; non_overlap avg t3 1/3 - 0.375
    for group, level, delta in (
        ("overlap", "avg", 1 / 6),
        ("overlap", 1, 0.25),
        ("non_overlap", "avg", 1 / 3 - 0.375),
    ):
        row = cell(t, model=V, group=group, level=level)
        assert (row.base, row.delta, row.delta_n) == (M, pytest.approx(delta), 1)
    assert cell(t, model=L, group="overlap", level="avg").n == 0
    assert "all" not in set(t.model) and t[t.model == L].delta.isna().all()  # no vbvr_ltx23
    assert t.group.unique().tolist() == ["overlap", "non_overlap"]


def test_transitions_give_label_percentages_summing_to_100(built):
    t = built["transitions"]
    expected = {
        # M's t1_lv2_001 failed its 2→10 call: it leaves every pair of M, its 1→2 too
        (M, "1→2"): ({"unrecognizable": 200 / 3, "stable": 100 / 3}, 3),
        (M, "2→10"): (
            {"wrong_to_correct": 100 / 3, "stable": 100 / 3, "correct_to_wrong": 100 / 3},
            3,
        ),
        (M, "10→40"): ({"stable": 100}, 1),
        (V, "1→2"): ({"unrecognizable": 50, "stable": 50}, 2),
        (V, "2→10"): ({"wrong_to_wrong": 50, "stable": 50}, 2),
        # pool M, V: 1→2 unrecognizable 2 + 1, stable 1 + 1 of 5
        ("all", "1→2"): ({"unrecognizable": 60, "stable": 40}, 5),
        ("all", "2→10"): (
            {"wrong_to_correct": 20, "stable": 40, "correct_to_wrong": 20, "wrong_to_wrong": 20},
            5,
        ),
    }
    for (model, step_pair), (shares, n) in expected.items():
        row = cell(t, model=model, step_pair=step_pair)
        assert row.n == n
        for label in tables.LABELS:
            assert row[label] == pytest.approx(shares.get(label, 0)), (model, step_pair, label)
    assert t[list(tables.LABELS)].sum(axis=1).tolist() == pytest.approx([100] * len(t))
    assert t[t.model == M].step_pair.tolist() == ["1→2", "2→10", "10→40"]  # numeric order
    assert t.model.unique().tolist() == [M, V, "all"]


def test_transitions_pool_only_the_listed_models_over_the_same_instances():
    """Hand-worked: A's i2 failed its 2→3 call and leaves A's 1→2 too; C is not pooled."""
    rows = [
        ("A", "i1", 1, 2, "stable", "ok"),
        ("A", "i1", 2, 3, "wrong_to_correct", "ok"),
        ("A", "i2", 1, 2, "unrecognizable", "error"),  # its 2→3 is not listed
        ("B", "i1", 1, 2, "unrecognizable", "ok"),
        ("B", "i1", 2, 3, "stable", "ok"),
        ("B", "i2", 1, 2, "unrecognizable", "ok"),
        ("B", "i2", 2, 3, "wrong_to_wrong", "ok"),
        ("C", "i1", 1, 2, "correct_to_wrong", "ok"),
        ("C", "i1", 2, 3, "correct_to_wrong", "ok"),
    ]
    pairs = pd.DataFrame(rows, columns=["model", "instance", "from", "to", "label", "status"])
    t = tables.transitions(pairs.rename(columns={"status": "transitions_status"}), ["A", "B"])
    expected = {
        ("A", "1→2"): ({"stable": 100}, 1),
        ("A", "2→3"): ({"wrong_to_correct": 100}, 1),
        ("B", "1→2"): ({"unrecognizable": 100}, 2),
        ("B", "2→3"): ({"stable": 50, "wrong_to_wrong": 50}, 2),
        ("C", "1→2"): ({"correct_to_wrong": 100}, 1),
        # A i1 + B i1, i2 in both columns
        ("all", "1→2"): ({"stable": 100 / 3, "unrecognizable": 200 / 3}, 3),
        ("all", "2→3"): (
            {"wrong_to_correct": 100 / 3, "stable": 100 / 3, "wrong_to_wrong": 100 / 3},
            3,
        ),
    }
    for (model, step_pair), (shares, n) in expected.items():
        row = cell(t, model=model, step_pair=step_pair)
        assert row.n == n
        for label in tables.LABELS:
            assert row[label] == pytest.approx(shares.get(label, 0)), (model, step_pair, label)
    assert len(t) == 8
    assert (
        "all"
        not in tables.transitions(
            pairs.rename(columns={"status": "transitions_status"}), []
        ).model.tolist()
    )


def test_unknown_transition_label_is_an_error(run):
    bad = run.pairs.assign(label="maybe")
    with pytest.raises(ValueError, match="maybe"):
        tables.transitions(bad, [M])


def test_errors_count_every_gap(built):
    t = built["errors"].set_index("model")
    assert t.columns.tolist() == [
        "selected",
        "ok",
        "error",
        "missing",
        "transitions_ok",
        "transitions_error",
        "transitions_missing",
        "transitions_failed",
        "generation_failed",
    ]
    assert t.loc[M].tolist() == [7, 5, 1, 1, 3, 1, 3, "t1_lv2_001", 0]
    assert t.loc[V].tolist() == [7, 7, 0, 0, 2, 0, 5, "", 0]
    assert t.loc[L].tolist() == [7, 0, 0, 7, 0, 0, 7, "", 0]
    assert t.loc["all"].tolist() == [21, 12, 1, 8, 5, 1, 15, f"{M}/t1_lv2_001", 0]


def test_bootstrap_cis(run, built):
    t = built["metrics_by_domain_level"]
    scored = t[t.n > 0]
    for value in ("completeness", "rubric", "final"):
        assert (scored[f"{value}_ci_low"] <= scored[value] + 1e-12).all()
        assert (scored[value] <= scored[f"{value}_ci_high"] + 1e-12).all()
    wide = cell(t, model="all", domain="overall", level="avg")
    assert wide.final_ci_low < wide.final < wide.final_ci_high
    pd.testing.assert_frame_equal(tables.metrics_by_domain_level(run.results), t)  # same seed
    # equal values: the CI collapses to the mean
    assert tables.bootstrap(np.full(5, 0.3)) == (pytest.approx([0.3]),) * 3
    row = cell(t, model=M, domain="dA", level=1)  # finals 0.5, 0.5
    assert row.final_ci_low == row.final == row.final_ci_high == 0.5


def test_plots_write_pngs_with_one_panel_per_model(built, tmp_path):
    figures = {
        "heatmap": plots.final_heatmap(built["final_by_domain_level"], tmp_path / "heatmap.png"),
        "skills": plots.skill_bars(built["skills"], tmp_path / "skills.png"),
        "transitions": plots.transition_bars(built["transitions"], tmp_path / "transitions.png"),
        "empty": plots.transition_bars(built["transitions"][:0], tmp_path / "empty.png"),
    }
    # M, V, L, all + the colour bar; one bar chart; M, V, all; no labels: no panel
    expected = {"heatmap": 5, "skills": 1, "transitions": 3, "empty": 0}
    for name, figure in figures.items():
        assert len(figure.axes) == expected[name], name
        png = (tmp_path / f"{name}.png").read_bytes()
        assert png.startswith(b"\x89PNG") and len(png) > 1000


class Named(dict):
    """Stands in for Snakemake's named lists: items by key or attribute."""

    __getattr__ = dict.__getitem__


def write_tables(root: Path, outdir: Path, folder: Path, judge: str) -> dict[str, str]:
    """Rule `tables`' job on the run at `outdir` under `judge`: the tables' paths by name."""
    table_paths = {name: str(folder / f"{name}.csv") for name in [*tables.TABLES, "vs_paper"]}
    inputs = {
        "scores": [],
        "transitions": ["x"],
        "selected": str(root / "selected.csv"),
        "taxonomy": str(root / "taxonomy.yaml"),
        "overlap": str(root / "overlap.yaml"),
        "paper_table": str(REPO / "tasks" / "paper_tables.csv"),
    }
    params = {"models": [M, V, L], "vbvr_pairs": tables.VBVR_PAIRS, "pool": [M, V]}
    params["paper_rows"] = {M: "wan2_2_i2v", V: "vbvr_wan2_2"}
    tables_job(
        SimpleNamespace(
            input=Named(inputs),
            output=Named(table_paths),
            log=[str(folder / "logs" / "job.log")],
            params=SimpleNamespace(no_checkpoints=[], judge_model=judge, **params),
            config={"outdir": str(outdir)},
        )
    )
    return table_paths


def judges(path: str) -> list[list[str]]:
    """The distinct (judge_model, judge_model_version, judge_note) of a table."""
    table = pd.read_csv(path, keep_default_na=False)[list(drift.COLUMNS)]
    return table.drop_duplicates().values.tolist()


def test_jobs_write_every_table_and_plot(run, tmp_path):
    table_paths = write_tables(run.root, run.outdir, tmp_path, drift.PAPER_JUDGE)
    for path in table_paths.values():  # every table names its judge; nothing to say
        assert judges(path) == [["gemini-3-flash-preview", REPLIED, ""]]
    errors = pd.read_csv(table_paths["errors"])
    assert errors.columns[0] == "model" and errors.selected.tolist() == [7, 7, 7, 21]
    final = pd.read_csv(table_paths["final_by_domain_level"])
    assert set(final.level.astype(str)) == {"1", "2", "avg"}
    skills = pd.read_csv(table_paths["skills"], keep_default_na=False)
    planning = skills[(skills.model == M) & (skills.skill == "planning")].iloc[0]
    assert (planning.tasks, planning.paper_tasks) == (2, 12)  # this taxonomy's, Table 9's
    assert planning.note == (
        "the release's task_names.yaml tags 2 tasks planning, the paper's Table 9 counts 12: "
        "the release's tags are used"
    )
    plot_paths = {name: str(tmp_path / f"{name}.png") for name in plots.PLOTS}
    plots_job(SimpleNamespace(input=Named(table_paths), output=Named(plot_paths),
                              log=[str(tmp_path / "logs" / "plots.log")]))  # fmt: skip
    assert all(Path(path).stat().st_size > 1000 for path in plot_paths.values())


def test_tables_say_when_their_judge_drifted(run, tmp_path):
    """One score of V answered by another version (the error has none): every table of the
    scores says so (Table 7, from labels of one version, does not), as does a judge other
    than the paper's."""
    outdir = tmp_path / "results"
    shutil.copytree(run.outdir, outdir)
    rerouted = layout.score_file(outdir, V, "t3", "t3_lv2_002")
    rerouted.write_text(json.dumps({**SCORES[V]["t3_lv2_002"], "model_version": "other-002"}))
    paths = write_tables(run.root, outdir, tmp_path, drift.PAPER_JUDGE)
    mixed = f"judge model versions mixed: {REPLIED} (11 documents), other-002 (1 documents)"
    for name, path in paths.items():
        seen = [REPLIED] if name == "transitions" else sorted([REPLIED, "other-002"])
        note = "" if name == "transitions" else mixed
        assert judges(path) == [[drift.PAPER_JUDGE, ", ".join(seen), note]], name
    other = drift.with_judge(pd.DataFrame({"model": [M]}), "gpt-5-mini", [REPLIED])
    assert other.judge_note.tolist() == [
        "judge gpt-5-mini is not the paper's (gemini-3-flash-preview)"
    ]


def test_the_skill_table_says_in_one_line_where_the_release_and_table_9_differ(run):
    """The release's task_names.yaml (spatial 8, temporal 4, affordance 4, topology 2)
    against Table 9 (7, 3, 5, 3): the release's tags stand, each differing row says so."""
    taxonomy = yaml.safe_load((Path(__file__).parents[2] / "tasks/task_names.yaml").read_text())
    counts = pd.Series([t for d in taxonomy.values() for ts in d.values() for t in ts])
    counts = counts.value_counts().to_dict()
    results = run.results.copy()
    results["skills"] = [("spatial", "planning")] * len(results)
    table = tables.skills(results, tag_tasks=counts).set_index(["model", "skill"])
    spatial, planning = table.loc[("all", "spatial")], table.loc[("all", "planning")]
    assert (spatial.tasks, spatial.paper_tasks) == (8, 7)
    assert spatial.note == (
        "the release's task_names.yaml tags 8 tasks spatial, the paper's Table 9 counts 7: "
        "the release's tags are used"
    )
    assert (planning.tasks, planning.paper_tasks, planning.note) == (12, 12, "")
    assert {counts[t] for t in ("temporal", "affordance", "topology")} == {4, 2}
    assert "note" not in tables.skills(run.results).columns  # no taxonomy given: as before


def test_vs_paper_sets_each_printed_number_beside_the_run(run, built):
    """Hand-worked: the run's value of each kind of paper number, x 100 where the paper's
    is a percent, and a note where the run has none."""
    columns = ["table", "section", "row", "name", "cell", "level", "metric", "value"]
    printed = [
        ("2", "dA", "wan2_2_i2v", "Wan2.2", "dA", "easy", "final", 40.0),
        ("6", "domain (top)", "vbvr_wan2_2", "VBVR", "overall", "avg", "delta", 19.7),
        ("D.3", "Non-overlap", "wan2_2_i2v", "Wan2.2", "t3", "avg", "final", 30.6),
        ("5", "Overlap", "vbvr_wan2_2", "VBVR", "overlap", "avg", "delta", 40.5),
        ("7", "step pair 1→2", "pool", "pooled", "1→2", "avg", "stable", 17.9),
        ("12", "Overall", "human", "Human", "overall", "avg", "strict_success", 97.1),
        ("2", "Overall", "sora2", "Sora 2", "overall", "avg", "final", 36.7),
        ("13", "6 tasks", "kling_v3_0", "Kling", "six_tasks", "avg", "final_half", 33.2),
        ("3", "judge design", "main", "Main", "all", "avg", "pairwise_accuracy", 73.2),
        ("15", "skill (bottom)", "main", "Main", "planning", "avg", "auc", 0.815),
    ]
    paper = pd.DataFrame(printed, columns=columns).assign(source="paper", note="")
    rows = {M: "wan2_2_i2v", V: "vbvr_wan2_2"}
    selected = run.results.drop_duplicates("instance").set_index("instance")[["domain", "level"]]

    def compare(extra=None):
        return vs_paper(
            paper, built | (extra or {}), run.results, rows, tables.VBVR_PAIRS, selected=selected
        ).set_index(["table", "paper_row"])

    table = compare()
    assert len(table) == len(printed)  # one row each: no two run models share a paper row
    easy = table.loc[("2", "wan2_2_i2v")]  # M's dA level 1: 0.5, 0.5 (t2's an error)
    assert (easy.model, easy.run, easy.difference, easy.n) == (M, 50.0, 10.0, 2)
    assert (easy.selected, easy.missing) == (3, 0)
    delta = table.loc[("6", "vbvr_wan2_2")]  # V's mean 4.5/7 minus M's 2.75/5
    assert delta.run == pytest.approx(100 * (4.5 / 7 - 2.75 / 5))
    assert delta.run_ci_low < delta.run < delta.run_ci_high and delta.n == 12
    assert table.loc[("D.3", "wan2_2_i2v"), ["run", "n"]].tolist() == [37.5, 2]  # 0, 0.75
    overlap = table.loc[("5", "vbvr_wan2_2")]  # t1 only: 2.5/3 - 2/3 (t2 has no M score)
    assert (overlap.run, overlap.n) == (pytest.approx(100 / 6), 1)
    pool = table.loc[("7", "pool")]
    assert (pool.model, pool.run) == ("all", 40.0)  # 2 of 5 labels stable: M's pairs 1→2
    assert pd.isna(table.loc[("12", "human"), "model"])
    assert table.loc[("2", "sora2"), "note"] == "no model of this run names paper_row 'sora2'"
    assert pd.isna(table.loc[("2", "sora2"), "run"])
    assert table.loc[("13", "kling_v3_0"), "note"].startswith("Table 13 needs a benchmark.subset")
    assert table.loc[("3", "main"), "note"].startswith("no human preferences in this run")
    judges = pd.DataFrame(
        {"judge": ["main"], "auc": [0.7], "auc_lo": [0.6], "auc_hi": [0.8], "n_pairs": [40]}
        | {"pairwise_accuracy": [0.65], "pairwise_accuracy_lo": [0.5]}
        | {"pairwise_accuracy_hi": [0.8]}
    )
    by_slice = judges.assign(slice_kind="skill", slice="planning", auc=0.9)
    table = compare({"judge_reliability": judges, "by_slice": by_slice})
    accuracy = table.loc[("3", "main")]
    assert [accuracy.run, accuracy.run_ci_low, accuracy.n] == [65.0, 50.0, 40]
    assert table.loc[("15", "main"), ["run", "difference"]].tolist() == pytest.approx(
        [0.9, 0.9 - 0.815]
    )
    # Table 13 from a subset: full run: a model's half at level avg; the mean over the run's
    # models that name one of the five rows
    stability = pd.DataFrame(
        {"model": [M, M, V], "level": ["avg", "1", "avg"], "final_half": [0.25, 0.5, 0.75]}
        | {"n_full": [6, 3, 7]}
    )
    thirteen = paper.iloc[[7]].assign(row="wan2_2_i2v")
    mean = thirteen.assign(row="mean")
    both = vs_paper(
        pd.concat([thirteen, mean, paper.iloc[[7]]]), {"subset_stability": stability},
        run.results, rows, tables.VBVR_PAIRS,
    ).set_index("paper_row")  # fmt: skip
    assert both.loc["wan2_2_i2v", ["model", "run", "n"]].tolist() == [M, 25.0, 6]
    assert both.loc["mean", ["model", "run", "n"]].tolist() == ["mean", 25.0, 1]  # M alone
    assert both.loc["kling_v3_0", "note"] == "no model of this run names paper_row 'kling_v3_0'"
