"""tasks/paper_tables.csv, the paper's printed numbers: each table's rows reproduce the
paper's own printed averages, totals and differences, so a number typed wrong shows."""

from __future__ import annotations

import pandas as pd
import pytest
import yaml

from tests.support.workflow import REPO
from workflow_scripts.benchmark.paper import read_paper_table

ROUNDING = 0.1 + 1e-9  # two numbers each rounded to 0.1 (0.05 apart at most each)
# Tables 2, 11 and 12: tasks per domain among the 26 judged (Table 12's rates are of 25
# Visual Organization instances a level, 35 in the others: 5 and 7 tasks of 5)
TASKS = {
    "visual_organization": 5, "spatiotemporal_dynamics": 7, "structured_puzzles": 7,
    "physical_manipulation": 7,
}  # fmt: skip
# Spatiotemporal cells judged on other counts than 35 a level (Table 12: 5.4 % = 2/37,
# 2.6 % = 1/38, 2.8 % = 1/36), so their Avg. is not the mean of the levels
UNEVEN = {"seedance2_0", "kling_v3_0", "veo3_1", "gen_4_5"}


@pytest.fixture(scope="module")
def paper():
    return read_paper_table(REPO / "tasks" / "paper_tables.csv")


def numbers(paper, table, metric=None) -> pd.DataFrame:
    rows = paper[paper["table"] == table]
    return rows if metric is None else rows[rows["metric"] == metric]


def test_a_row_per_printed_number(paper):
    counts = paper.groupby("table", sort=False).size().to_dict()
    assert counts == {
        "2": 10 * 17, "11": 10 * 17 * 3, "12": 11 * 17, "5": 6 * 3 + 3 * 3, "6": 3 * 5 + 3 * 7,
        "7": 6 * 5, "13": 6 * 3, "3": 6 * 2, "14": 6 * 2, "15": 11 * 2, "D.3": 11 * 3,
    }  # fmt: skip
    assert (paper["source"] != "").all()


def test_tables_2_11_12_reproduce_their_averages_and_overall(paper):
    cells = paper[paper["table"].isin(["2", "11", "12"])]
    by_level = cells.pivot_table(
        index=["table", "row", "cell", "metric"], columns="level", values="value"
    ).dropna(subset=["easy"])
    gap = (by_level[["easy", "mid", "hard"]].mean(axis=1) - by_level["avg"]).abs()
    off = gap[gap > ROUNDING].index
    assert {(row, cell) for _, row, cell, _ in off} == {
        (row, "spatiotemporal_dynamics") for row in UNEVEN
    }
    assert len(off) == 15  # the Avg. of uneven counts; every other Avg. is the levels' mean
    avg = cells[cells["level"] == "avg"].pivot_table(
        index=["table", "row", "metric"], columns="cell", values="value"
    )
    pooled = sum(avg[cell] * tasks for cell, tasks in TASKS.items()) / sum(TASKS.values())
    gap = (pooled - avg["overall"]).abs()
    assert set(gap[gap > ROUNDING].index.get_level_values("row")) == {
        "kling_v3_0", "veo3_1", "human",  # uneven counts; the human study's own sample
    }  # fmt: skip
    table2 = numbers(paper, "2").set_index(["row", "cell", "level"])["value"]
    table11 = numbers(paper, "11", "final").set_index(["row", "cell", "level"])["value"]
    assert table2.sort_index().equals(table11.sort_index())  # VBVR-Wan2.2's too


def deltas_hold(paper, table, by):
    """Every printed delta is the VBVR row minus its base row's (within rounding)."""
    rows = numbers(paper, table)
    base = {"vbvr_wan2_2": "wan2_2_i2v", "vbvr_wan2_1": "wan2_1_i2v", "vbvr_ltx2_3": "ltx2_3"}
    final = rows[rows.metric == "final"].set_index(["row", by])["value"]
    for delta in rows[rows.metric == "delta"].itertuples():
        key = getattr(delta, by)
        assert abs(final[delta.row, key] - final[base[delta.row], key] - delta.value) <= ROUNDING


def test_tables_5_6_and_d3_deltas_and_table_6_beside_table_2(paper):
    for table in ("5", "6", "D.3"):
        deltas_hold(paper, table, "cell")
    six = numbers(paper, "6", "final").set_index(["row", "cell"])["value"]
    two = numbers(paper, "2").query("level == 'avg'").set_index(["row", "cell"])["value"]
    same = [key for key in two.index if key in six.index and six[key] == two[key]]
    assert len(same) == 6  # all but Structured Puzzles and Overall, which the data notes
    noted = numbers(paper, "6").query("note != ''")
    assert set(noted["cell"]) == {"structured_puzzles", "overall"} and len(noted) == 4


def test_the_overlap_groups_the_per_task_numbers_determine(paper):
    """Appendix D.3 names 11 tasks with their group; each group's mean in Table 5 needs
    tasks it does not name, so the other 16 stay unassigned in tasks/overlap.yaml."""
    d3 = numbers(paper, "D.3", "final")
    group = {"Overlap": "overlap", "Semi-overlap": "semi_overlap", "Non-overlap": "non_overlap"}
    named = d3.assign(group=d3["section"].map(group))
    placed = yaml.safe_load((REPO / "tasks" / "overlap.yaml").read_text(encoding="utf-8"))
    for name, tasks in named.groupby("group"):
        assert sorted(placed[name]) == sorted(set(tasks["cell"]))
        means = tasks.groupby("row")["value"].mean()
        five = numbers(paper, "5", "final").query("cell == @name").set_index("row")["value"]
        for row, mean in means.items():
            assert abs(mean - five[row]) > ROUNDING  # the group holds unnamed tasks
    assert len(placed["unassigned"]) == 27 - 11


def test_tables_7_13_and_the_judge_tables(paper):
    seven = numbers(paper, "7").groupby("cell")["value"].sum()
    assert ((seven - 100).abs() <= 0.2 + 1e-9).all(), seven  # five labels, each rounded
    thirteen = numbers(paper, "13").pivot_table(index="row", columns="metric", values="value")
    gap = thirteen["final_half"] - thirteen["final_full"] - thirteen["difference"]
    assert (gap.abs() <= ROUNDING).all()
    five = thirteen.drop(index="mean").mean()
    assert ((five - thirteen.loc["mean"]).abs() <= 0.05 + 1e-9).all()
    three, fourteen = (numbers(paper, t).drop(columns="table") for t in ("3", "14"))
    assert three.reset_index(drop=True).equals(fourteen.reset_index(drop=True))
    main = three.query("row == 'main'").set_index("metric")["value"].to_dict()
    assert main == {"auc": 0.803, "pairwise_accuracy": 73.2}
    fifteen = numbers(paper, "15")
    assert fifteen["value"].between(0.73, 80.3).all()  # C.3: 0.73-0.85 AUC, 69-80 % accuracy


@pytest.mark.parametrize(
    "edit, problem",
    [
        (lambda t: t.drop(columns="metric"), "lacks metric"),
        (lambda t: pd.concat([t, t.head(1)]), "repeats a table/row/cell/level/metric"),
        (lambda t: t.assign(value=t["value"].astype(str).str.replace("36.7", "n/a")), "number"),
    ],
)
def test_the_reader_names_the_key_and_the_problem(tmp_path, paper, edit, problem):
    path = tmp_path / "paper.csv"
    edit(paper).to_csv(path, index=False)
    with pytest.raises(ValueError, match=rf"^benchmark\.paper_table {path}.*{problem}"):
        read_paper_table(path)
