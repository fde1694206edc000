"""The paper's tables from the published generations: config/published.yaml on a fake
published folder in the dataset's layout (`<videos_root>/<id>/<task>/<instance>.mp4`, all ten
ids) judged by the FakeVLM; tables/vs_paper.csv sets each model beside every number the
paper prints."""

from __future__ import annotations

import pandas as pd
import pytest
import yaml

from tests.support.fake_vlm import FakeVLM
from tests.support.scripted_judge import Judge
from tests.support.videos import clip, write_videos
from tests.support.workflow import REPO, default_config, snakemake
from workflow_scripts.aggregate.vs_paper import NOT_RUN
from workflow_scripts.benchmark.paper import read_paper_table

INSTANCES = ["maze_square_lv1_001", "maze_square_lv1_002"]
PAPER = {  # the README's leaderboard (hexuan21/VGI-Bench @71a9e2d), overall
    "seedance2_0": 51.0, "mnx_h3": 44.4, "kling_v3_0": 44.0, "vbvr_wan2_2": 40.2,
    "sora2": 36.7, "gen_4_5": 36.6, "wan2_7_i2v": 35.7, "veo3_1": 32.0, "wan2_2_i2v": 21.6,
    "hunyuanvideo1_5": 19.1,
}  # fmt: skip
LACKING = "veo3_1"  # its folder lacks INSTANCES[0]: judged on the other, counted missing


def published_config(workdir, root) -> dict:
    """The default config with config/published.yaml's models and subset (`published`: the
    instances the published folders hold) over it, on the bundled examples."""
    published = yaml.safe_load((REPO / "config" / "published.yaml").read_text(encoding="utf-8"))
    subset = published["benchmark"]["subset"]
    config = default_config(workdir, tasks=["maze_square"], levels=[1], subset=subset)
    config["models"], config["videos_root"] = published["models"], str(root)
    return config


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("published")
    root = workdir / "eval_res" / "video_model_res"
    for k, row in enumerate(PAPER):  # each model's videos its own (the judge cache)
        held = INSTANCES[1:] if row == LACKING else INSTANCES  # one published file missing
        write_videos(root / row, {i: clip(k % 8, 30 + 60 * (k // 8)) for i in held})
    config = published_config(workdir, root)
    with pytest.MonkeyPatch.context() as env, FakeVLM(Judge(tier=2, violations=[0])) as fake:
        env.setenv("FAKE_VLM_KEY", "test-key")
        config["judge"] = {"enabled": True, "base_url": fake.url, "api_key_env": "FAKE_VLM_KEY"}
        result = snakemake(workdir, config, "tables", "plots", "coverage")
    assert result.returncode == 0, result.stdout[-3000:]
    return workdir / "results"


def test_every_published_model_is_judged_and_set_beside_the_papers_number(run):
    table = pd.read_csv(run / "tables" / "vs_paper.csv", dtype={"table": str})
    two = table[table["table"] == "2"]
    overall = two[two["cell"] == "overall"].set_index("paper_row")
    assert sorted(overall.index) == sorted(PAPER)  # in the paper's order, one model each
    overall = overall.loc[list(PAPER)]
    assert overall["model"].tolist() == [f"paper_{row}" for row in PAPER]
    assert overall["paper"].to_dict() == PAPER
    finals = pd.read_csv(run / "tables" / "final_by_domain_level.csv")
    finals = finals.query("domain == 'overall' and level == 'avg'").set_index("model")["final"]
    for row, line in overall.iterrows():
        assert line["n"] == len(INSTANCES) - (row == LACKING)
        assert (line["selected"], line["missing"]) == (len(INSTANCES), row == LACKING)
        assert line["run"] == pytest.approx(100 * finals[line["model"]])
        assert line["difference"] == pytest.approx(line["run"] - PAPER[row])
        assert line["difference_ci_low"] <= line["difference"] <= line["difference_ci_high"]
    # one domain and level in this run: its cell is the overall's, the others say so
    easy = two.query("cell == 'structured_puzzles' and level == 'easy'").set_index("paper_row")
    assert easy.loc[list(PAPER), "run"].tolist() == overall["run"].tolist()
    assert easy.loc["seedance2_0", "paper"] == 46.9 and easy.loc["vbvr_wan2_2", "paper"] == 57.9
    hard = two.query("cell == 'physical_manipulation' and level == 'hard'")
    assert hard["run"].isna().all()
    assert hard["note"].str.endswith("the run has no instance of this cell").all()
    assert (run / "plots" / "vs_paper.png").stat().st_size > 1000
    coverage = pd.read_csv(run / "tables" / "coverage.csv").set_index(["model", "level"])
    assert coverage.loc[(f"paper_{LACKING}", "all"), ["found", "missing"]].tolist() == [1, 1]
    skills = pd.read_csv(run / "tables" / "skills.csv", keep_default_na=False)
    assert set(skills.loc[skills.skill == "planning", "note"]) == {""}  # 12 tasks in both
    missing = pd.read_csv(run / "tables" / "coverage_missing.csv")
    assert missing[["model", "instance"]].values.tolist() == [[f"paper_{LACKING}", INSTANCES[0]]]
    print(overall[["paper_name", "run", "paper", "difference"]].to_string())


def test_every_number_the_paper_prints_has_its_row(run):
    """A row per table and printed number, each published model beside its own; what the
    run does not compute keeps its row and says why."""
    table = pd.read_csv(run / "tables" / "vs_paper.csv", dtype={"table": str})
    paper = read_paper_table(REPO / "tasks" / "paper_tables.csv")
    assert table.groupby("table", sort=False).size().to_dict() == (
        paper.groupby("table", sort=False).size().to_dict()
    )
    assert table[["table", "paper_row", "cell", "level", "metric"]].equals(
        paper[["table", "row", "cell", "level", "metric"]].rename(columns={"row": "paper_row"})
    )
    has = table.dropna(subset=["run"]).groupby("table").size().to_dict()
    # Tables 2/11/12: 10 models x (structured puzzles easy and avg, overall), x 3 metrics in
    # 11; Table 5: the base and VBVR rows in the overlap group, and the delta; Table 6: their
    # finals in structured puzzles and overall, the planning skill, and the three deltas;
    # D.3: maze_square, both and the delta
    assert has == {"2": 30, "11": 90, "12": 30, "5": 3, "6": 9, "D.3": 3}
    maze = table.query("table == 'D.3' and cell == 'maze_square'").set_index("metric")
    assert maze.loc["delta", "model"] == "paper_vbvr_wan2_2"
    vbvr, base = maze.loc["final"].set_index("model")["run"]
    assert maze.loc["delta", "run"] == pytest.approx(vbvr - base)
    notes = table.dropna(subset=["note"]).set_index(["table", "paper_row"])["note"]
    assert notes["7", "pool"].iloc[0] == NOT_RUN["7"]
    assert notes["13", "sora2"].iloc[0].endswith(NOT_RUN["13"])
    assert notes["15", "main"].iloc[0] == NOT_RUN["judge"]
    assert "no counterpart the run computes" in notes["12", "human"].iloc[0]
    assert (
        notes["5", "wan2_1_i2v"]
        .iloc[0]
        .endswith("no model of this run names paper_row 'wan2_1_i2v'")
    )
    print(table.groupby("table", sort=False).size().to_string())
    print(table.dropna(subset=["run"]).groupby("table").head(1).T.to_string())


def test_a_paper_row_the_table_lacks_and_a_missing_folder_are_named_before_any_job(tmp_path):
    registry = yaml.safe_load((REPO / "config" / "models.yaml").read_text(encoding="utf-8"))
    registry["paper_sora2"]["paper_row"] = "sora3"
    (tmp_path / "models.yaml").write_text(yaml.safe_dump(registry), encoding="utf-8")
    config = published_config(tmp_path, tmp_path / "nowhere")
    config["model_registry"] = str(tmp_path / "models.yaml")
    result = snakemake(tmp_path, config, "-n")
    assert result.returncode != 0
    assert "model 'paper_sora2': paper_row 'sora3' is not a row of" in result.stdout
    missing = f"model 'paper_veo3_1': videos folder not found ({tmp_path / 'nowhere' / 'veo3_1'})"
    assert missing in result.stdout
    assert not (tmp_path / "results").exists()
