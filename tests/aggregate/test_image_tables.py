"""Table 4 (the image branch) on image judge documents whose every figure is worked out by hand.

    model  level 1 (ok: success)   level 2            level 3
    A      1 1 1 0  + 1 error      1 0                1 0 0 0 0  + 2 errors
    B      1 1                     2 errors           1 0 0 0   (over two tasks)
    C      1 0                     (none)             0

Rates in percent over the ok documents: A 75, 50, 20, avg 48.33 (an error taken as a
failure would give 60 at level 1; the pooled rate would be 5/11 = 45.45); B 100, -, 25,
avg 62.5; C 50, -, 0, avg 25.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from workflow_scripts.aggregate import images, plots
from workflow_scripts.aggregate.tables import SEED, bootstrap
from workflow_scripts.benchmark.paper import TABLE4, read_paper_table
from workflow_scripts.common.files import OutdirFileError
from workflow_scripts.judge import drift

REPO = Path(__file__).resolve().parents[2]
PAPER4 = REPO / "tasks" / "paper_table4.csv"
OK, NO, ERR = True, False, "error"
RUN = {  # model -> task -> level -> outcomes
    "A": {"sorting": {1: [OK, OK, OK, NO, ERR], 2: [OK, NO], 3: [OK, NO, NO, NO, NO, ERR, ERR]}},
    "B": {"sorting": {1: [OK], 2: [ERR, ERR], 3: [OK, NO]}, "maze": {1: [OK], 3: [NO, NO]}},
    "C": {"maze": {1: [OK, NO], 3: [NO]}},
}
RATES = {"A": {1: 75.0, 2: 50.0, 3: 20.0}, "B": {1: 100.0, 3: 25.0}, "C": {1: 50.0, 3: 0.0}}
ROWS = {"A": "gpt_image_2", "B": "bagel"}  # Table 4: 41.2/48.8/38.8/36.2, 0.8/1.2/1.2/0.0


def score(folder: Path, instance: str, outcome) -> Path:
    path = folder / instance / "score.json"
    path.parent.mkdir(parents=True)
    document = (
        {"status": "error", "success": None, "reason": "no image"}
        if outcome == ERR
        else {"status": "ok", "success": outcome, "model_version": "img-v1"}
    )
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


@pytest.fixture
def run(tmp_path):
    """The judge_image folders (model, task) and every score.json written."""
    folders, paths = [], []
    for model, tasks in RUN.items():
        for task, levels in tasks.items():
            folder = tmp_path / "out" / model / task / "judge_image"
            folders.append(folder)
            for level, outcomes in levels.items():
                for k, outcome in enumerate(outcomes):
                    paths.append(score(folder, f"{task}_lv{level}_{k:03d}", outcome))
    return SimpleNamespace(folders=folders, paths=paths, results=images.image_results(paths))


def by_level(table: pd.DataFrame) -> dict:
    return {(row.model, row.level): row for row in table.itertuples()}


def test_results_are_read_from_the_layout(run):
    results = run.results
    assert list(results.columns) == images.RESULTS and len(results) == len(run.paths) == 25
    first = results.iloc[0]
    assert (first.model, first.task, first.instance, first.level) == (
        "A",
        "sorting",
        "sorting_lv1_000",
        1,
    )
    assert results.loc[results.status == "error", "success"].isna().all()
    assert results["status"].value_counts().to_dict() == {"ok": 20, "error": 5}


def test_level_rates_count_errors_apart_and_avg_is_the_mean_of_the_levels(run):
    table = images.image_success(run.results)
    assert list(table.columns) == images.SUCCESS
    assert table[["model", "level"]].values.tolist() == [
        ["A", 1], ["A", 2], ["A", 3], ["A", "avg"],
        ["B", 1], ["B", 2], ["B", 3], ["B", "avg"],
        ["C", 1], ["C", 3], ["C", "avg"],
    ]  # fmt: skip
    rows = by_level(table)
    for model, rates in RATES.items():
        for level, rate in rates.items():
            assert rows[model, level].success == pytest.approx(rate), (model, level)
        assert rows[model, "avg"].success == pytest.approx(np.mean(list(rates.values())))
    assert rows["A", "avg"].success == pytest.approx(48.3333, abs=1e-4)
    counts = {key: (row.n, row.errors) for key, row in rows.items()}
    assert counts["A", 1] == (4, 1) and counts["A", 3] == (5, 2) and counts["A", "avg"] == (11, 3)
    assert counts["B", 2] == (0, 2) and np.isnan(rows["B", 2].success)  # only errors: no rate
    assert counts["B", "avg"] == (6, 2) and counts["C", "avg"] == (3, 0)


def test_cis_hold_the_rate_follow_the_bootstrap_and_are_stable_for_a_seed(run):
    table = images.image_success(run.results)
    rated = table.dropna(subset=["success"])
    assert (rated.success_ci_low <= rated.success).all()
    assert (rated.success <= rated.success_ci_high).all()
    rows = by_level(table)
    _, low, high = bootstrap([100, 100, 100, 0], seed=[SEED, 1])  # A's level 1: its own stream
    assert (rows["A", 1].success_ci_low, rows["A", 1].success_ci_high) == (low[0], high[0])
    assert rows["A", 1].success_ci_low < 75 < rows["A", 1].success_ci_high
    # stratified: B's level 1 is always 100, so each draw's avg is (100 + level 3's) / 2
    for bound in ("success_ci_low", "success_ci_high"):
        assert getattr(rows["B", "avg"], bound) == pytest.approx(
            (100 + getattr(rows["B", 3], bound)) / 2
        )
        assert getattr(rows["C", "avg"], bound) == pytest.approx(getattr(rows["C", 1], bound) / 2)
    pd.testing.assert_frame_equal(images.image_success(run.results), table)
    other = images.image_success(run.results, seed=SEED + 1)
    assert not other[["success_ci_low", "success_ci_high"]].equals(
        table[["success_ci_low", "success_ci_high"]]
    )


def test_beside_the_paper_avg_first_then_easy_mid_hard(run):
    table = images.image_vs_paper(run.results, ROWS, read_paper_table(PAPER4, TABLE4))
    assert list(table.columns) == images.VS_PAPER
    assert table[["model", "level"]].values.tolist() == [
        ["A", "avg"], ["A", 1], ["A", 2], ["A", 3], ["B", "avg"], ["B", 1], ["B", 2], ["B", 3],
    ]  # fmt: skip
    rows = by_level(table)
    assert rows["A", "avg"].paper_row == "gpt_image_2" and rows["A", 1].paper_name == "GPT-Image-2"
    expected = {
        ("A", "avg"): 48.3333 - 41.2, ("A", 1): 75 - 48.8, ("A", 2): 50 - 38.8,
        ("A", 3): 20 - 36.2, ("B", "avg"): 62.5 - 0.8, ("B", 1): 100 - 1.2, ("B", 3): 25 - 0.0,
    }  # fmt: skip
    for key, difference in expected.items():
        row = rows[key]
        assert row.difference == pytest.approx(difference, abs=1e-4), key
        assert row.difference_ci_low == pytest.approx(row.success_ci_low - row.paper)
        assert row.difference_ci_high == pytest.approx(row.success_ci_high - row.paper)
    assert rows["B", 2].paper == 1.2 and np.isnan(rows["B", 2].difference)  # no ok image
    assert rows["A", "avg"].n == 11
    with pytest.raises(ValueError, match="not rows of the paper's Table 4: gpt_image_9"):
        images.image_vs_paper(run.results, {"A": "gpt_image_9"}, read_paper_table(PAPER4, TABLE4))


def test_the_typed_table_4_reads_and_each_avg_is_the_mean_of_its_levels():
    paper = read_paper_table(PAPER4, TABLE4)
    assert len(paper) == 13 and set(paper["type"]) == {"open", "commercial"}
    assert paper.loc["nano_banana_pro", ["avg", "easy", "mid", "hard"]].tolist() == [
        55.0, 62.5, 50.0, 52.5,
    ]  # fmt: skip
    assert (paper["type"] == "open").sum() == 6
    # each number rounded to 0.1 (rates of 80 images, multiples of 1.25, shown to one
    # decimal): the mean of the rounded levels is within 0.05 + 0.05 of the rounded Avg.
    gap = (paper[["easy", "mid", "hard"]].mean(axis=1) - paper["avg"]).abs()
    assert (gap <= 0.1 + 1e-9).all(), gap[gap > 0.1]
    assert paper["source"].str.contains("table.lb-img-t").all()


def test_the_reader_names_each_tables_key_and_columns():
    tables = read_paper_table(REPO / "tasks" / "paper_tables.csv")  # the video tables: default
    sora = tables.query("table == '2' and row == 'sora2' and cell == 'overall'")
    assert sora["value"].tolist() == [36.7]
    with pytest.raises(
        ValueError, match=r"benchmark\.paper_image_table .* lacks type, avg, easy, mid, hard"
    ):
        read_paper_table(REPO / "tasks" / "paper_tables.csv", TABLE4)
    with pytest.raises(ValueError, match=r"^benchmark\.paper_table .* lacks table, section, "):
        read_paper_table(PAPER4)


@pytest.mark.parametrize(
    "content, problem",
    [
        ("", "is empty"),
        ('{"status": "ok"', "is not complete JSON"),
        ('{"status": "ok", "final": 0.5}', "is not an image judge's score"),
        ('{"success": true}', "lacks status"),
    ],
)
def test_a_foreign_or_empty_score_is_named_with_its_path(run, content, problem):
    broken = run.paths[3]
    broken.write_text(content, encoding="utf-8")
    with pytest.raises(OutdirFileError) as raised:
        images.image_results(run.paths)
    assert raised.value.path == broken and problem in str(raised.value)
    assert f"delete the folder {broken.parents[1]}" in str(raised.value)


def test_a_file_outside_the_layout_is_refused(tmp_path):
    path = score(tmp_path / "A" / "sorting" / "judge", "sorting_lv1_000", OK)
    with pytest.raises(ValueError, match="not <model>/<task>/judge_image/"):
        images.image_results([path])


class Named(dict):
    """Stands in for Snakemake's named lists: items by key or attribute."""

    __getattr__ = dict.__getitem__


def job(tmp_path, folders, rows) -> SimpleNamespace:
    names = {"success": "image_success.csv", "vs_paper": "image_vs_paper.csv", "plot": "p.png"}
    return SimpleNamespace(
        input=Named(scores=[str(folder) for folder in folders]),
        output=Named({key: str(tmp_path / name) for key, name in names.items()}),
        params=SimpleNamespace(
            paper_rows=rows, paper_table=str(PAPER4), judge_model=drift.PAPER_JUDGE
        ),
        log=[str(tmp_path / "logs" / "image_tables.log")],
    )


def test_the_job_writes_both_tables_and_the_plot(run, tmp_path):
    smk = job(tmp_path, run.folders, ROWS)
    images.image_tables_job(smk)
    success = pd.read_csv(smk.output.success)
    expected = images.image_success(run.results).astype({"level": str})
    judged = [drift.PAPER_JUDGE, "img-v1", ""]  # the paper's judge, one version: no note
    expected[list(drift.COLUMNS)] = judged
    success = success.astype({"level": str}).fillna({"judge_note": ""})
    pd.testing.assert_frame_equal(success, expected, check_dtype=False)
    compared = pd.read_csv(smk.output.vs_paper, keep_default_na=False)
    assert compared["model"].tolist() == ["A"] * 4 + ["B"] * 4
    assert compared[list(drift.COLUMNS)].drop_duplicates().values.tolist() == [judged]
    png = Path(smk.output.plot).read_bytes()
    assert png.startswith(b"\x89PNG") and len(png) > 1000


def test_the_job_without_paper_rows_or_scores_writes_empty_tables(tmp_path):
    smk = job(tmp_path, [], {})
    images.image_tables_job(smk)
    judge = list(drift.COLUMNS)
    assert pd.read_csv(smk.output.success).columns.tolist() == images.SUCCESS + judge
    assert pd.read_csv(smk.output.vs_paper).columns.tolist() == images.VS_PAPER + judge
    assert Path(smk.output.plot).stat().st_size > 1000


def test_the_job_ends_with_the_broken_files_path(run, tmp_path):
    run.paths[0].write_text("", encoding="utf-8")
    with pytest.raises(SystemExit) as ended:
        images.image_tables_job(job(tmp_path, run.folders, ROWS))
    assert ended.value.code.startswith(f"{run.paths[0]} is empty. To fix it: delete the folder")


def test_the_plot_marks_the_papers_avg_beside_the_models_that_have_one(run, tmp_path):
    success = images.image_success(run.results)
    compared = images.image_vs_paper(run.results, ROWS, read_paper_table(PAPER4, TABLE4))
    figure = plots.image_bars(success, compared, tmp_path / "plot.png")
    (ax,) = figure.axes
    assert len(ax.patches) == 4 * 3  # Easy, Mid, Hard, Avg.: a bar per model each
    marks = ax.collections[-1].get_offsets()
    assert [y for _, y in marks if not np.ma.is_masked(y)] == [41.2, 0.8]  # C has no row
