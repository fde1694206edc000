"""The image branch on published images: config/published.yaml's image models on a fake
published folder in the dataset's layout (`<images_root>/<id>/<task>/<instance>.png`), over
the bundled examples' tasks that ship an image prompt (block_assembly ships none), judged
by the FakeVLM; tables/image_success.csv as Table 4 and tables/image_vs_paper.csv beside
the paper's rates."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import yaml
from PIL import Image

from tests.support.fake_vlm import FakeVLM
from tests.support.scripted_judge import ImageJudge, Judge
from tests.support.workflow import EXAMPLES, REPO, default_config, snakemake
from workflow_scripts.judge.frames import encode_image

TASKS = ["block_assembly", "clock_running", "sorting"]
INSTANCES = [f"{task}_lv{lv}_00{n}" for task in TASKS[1:] for lv in (1, 2) for n in (1, 2)]
# model -> the instances whose image the scripted judge passes (a bright image)
PASSES = {
    "nano_banana_pro": INSTANCES,
    "gpt_image_2": [i for i in INSTANCES if i.endswith("_001")],
    "bagel": ["sorting_lv2_002"],
}
PAPER_AVG = {"nano_banana_pro": 55.0, "gpt_image_2": 41.2, "bagel": 0.8}  # Table 4


def write_images(root) -> None:
    """Each model's image of each instance: bright where it passes, else dark, with a patch
    of its own (no two alike: the requests are told apart by their generated image)."""
    for k, (model, passes) in enumerate(PASSES.items()):
        for n, instance in enumerate(INSTANCES):
            value = 200 if instance in passes else 40
            image = np.full((36, 64, 3), value, np.uint8)
            image[4 * k : 4 * k + 4, 4 * n : 4 * n + 4] = 255 - value
            path = root / model / instance.split("_lv")[0] / f"{instance}.png"
            path.parent.mkdir(parents=True, exist_ok=True)
            Image.fromarray(image).save(path)


def image_config(workdir, root) -> dict:
    """The default config with config/published.yaml's image models over it (three of
    them), on the bundled examples; the video model a held image (no GPU)."""
    config = default_config(workdir, tasks=TASKS, levels=[1, 2], subset="full")
    config["models"] = ["static_image"]
    published = yaml.safe_load((REPO / "config" / "published.yaml").read_text(encoding="utf-8"))
    config["image_models"] = [f"paper_{model}" for model in PASSES]
    assert set(config["image_models"]) <= set(published["image_models"])
    config["images_root"] = str(root)
    return config


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("images")
    root = workdir / "eval_res" / "image_model_res"
    write_images(root)
    config = image_config(workdir, root)
    with (
        pytest.MonkeyPatch.context() as env,
        FakeVLM(ImageJudge(other=Judge(tier=1, violations=[0]))) as fake,
    ):
        env.setenv("FAKE_VLM_KEY", "test-key")
        config["judge"] = {"enabled": True, "base_url": fake.url, "api_key_env": "FAKE_VLM_KEY"}
        plan = snakemake(workdir, config, "plan")
        assert plan.returncode == 0, plan.stdout[-3000:]
        plan = pd.read_csv(workdir / "results" / "plan.csv", index_col="model")
        result = snakemake(workdir, config, "image_all")
        assert result.returncode == 0, result.stdout[-3000:]
        costs = pd.read_csv(workdir / "results" / "tables" / "costs.csv")
        requests = list(fake.requests)
        again = snakemake(workdir, config, "image_all", "--forcerun", "judge_image")
        assert again.returncode == 0, again.stdout[-3000:]
        resent = fake.requests[len(requests) :]
        gallery = snakemake(workdir, config, "gallery")
        assert gallery.returncode == 0, gallery.stdout[-3000:]
    out = workdir / "results"
    return {"out": out, "requests": requests, "resent": resent, "plan": plan, "costs": costs}


def test_every_image_is_judged_once_with_what_c2_names(run):
    """One request per image: the image prompt, the input image, the reference image where
    the release has one (sorting's `_gt.png`), the reference text where it has one
    (clock_running's), then the generated image; a forced rerun is answered by the cache."""
    requests, out = run["requests"], run["out"]
    assert all("success" in r.schema["properties"] for r in requests)  # image_all: images only
    assert len(requests) == len(PASSES) * len(INSTANCES) and not run["resent"]
    by_image = {bytes(r.images[-1]): r for r in requests}
    for model in PASSES:
        for instance in INSTANCES:
            task, level = instance.split("_lv")[0], instance.split("_lv")[1][0]
            generated = out / f"paper_{model}" / task / instance / "image.png"
            request = by_image[encode_image(generated)]
            inputs = EXAMPLES / task / "input_image" / f"lv{level}"
            expected = [encode_image(inputs / f"{instance}.png")]
            if task == "sorting":
                expected.append(encode_image(inputs / f"{instance}_gt.png"))
            assert request.images == [*expected, encode_image(generated)], instance
            text = "\n".join(request.texts)
            prompt = (EXAMPLES / task / "prompt/image_gen_prompt" / f"{task}.txt").read_text()
            assert prompt.strip() in text
            assert ("1 hour and 45 minutes" in text) == (task == "clock_running")


def test_scores_and_table_4(run):
    out = run["out"]
    for model, passes in PASSES.items():
        for instance in INSTANCES:
            task = instance.split("_lv")[0]
            folder = out / f"paper_{model}" / task / "judge_image"
            score = json.loads((folder / instance / "score.json").read_text())
            assert score["status"] == "ok" and score["success"] == (instance in passes)
            assert score["reasoning"]
    assert not (out / "paper_nano_banana_pro" / "block_assembly").exists()
    table = pd.read_csv(out / "tables" / "image_success.csv", dtype={"level": str})
    table = table.set_index(["model", "level"])
    for model, passes in PASSES.items():
        levels = {lv: [i for i in INSTANCES if f"_lv{lv}_" in i] for lv in "12"}
        rates = {lv: 100 * sum(i in passes for i in ids) / len(ids) for lv, ids in levels.items()}
        for lv, rate in rates.items():
            row = table.loc[(f"paper_{model}", lv)]
            assert row["success"] == pytest.approx(rate) and row["n"] == 4 and row["errors"] == 0
        avg = table.loc[(f"paper_{model}", "avg")]
        assert avg["success"] == pytest.approx(np.mean(list(rates.values())))
        assert avg["success_ci_low"] <= avg["success"] <= avg["success_ci_high"]
    vs = pd.read_csv(out / "tables" / "image_vs_paper.csv", dtype={"level": str})
    vs = vs[vs["level"] == "avg"].set_index("paper_row")
    assert vs["paper"].to_dict() == PAPER_AVG
    for row, line in vs.iterrows():
        assert line["difference"] == pytest.approx(line["success"] - PAPER_AVG[row])
    assert (out / "plots" / "image_success.png").stat().st_size > 1000


def test_a_wrong_row_and_a_release_without_image_prompts_are_named_first_a_missing_image_not(
    tmp_path,
):
    root = tmp_path / "eval_res"
    write_images(root)
    (root / "bagel" / "sorting" / "sorting_lv2_001.png").unlink()
    registry = yaml.safe_load((REPO / "config" / "models.yaml").read_text(encoding="utf-8"))
    registry["paper_gpt_image_2"]["paper_row"] = "gpt_image_3"
    (tmp_path / "models.yaml").write_text(yaml.safe_dump(registry), encoding="utf-8")
    config = image_config(tmp_path, root)
    config["model_registry"] = str(tmp_path / "models.yaml")
    result = snakemake(tmp_path, config, "-n")
    assert result.returncode != 0
    # a missing image is no problem (coverage.csv counts it): the wrong row is
    assert "sorting_lv2_001" not in result.stdout and "problem(s) found" in result.stdout
    assert "model 'paper_gpt_image_2': paper_row 'gpt_image_3' is not a row of" in result.stdout
    config["benchmark"]["tasks"] = ["block_assembly"]
    result = snakemake(tmp_path, config, "-n")
    assert result.returncode != 0
    none = "image_models: none of the selected tasks (block_assembly) ships an image prompt"
    assert none in result.stdout
    config["models"], config["image_models"] = ["paper_bagel"], ["static_image"]
    result = snakemake(tmp_path, config, "-n")
    assert result.returncode != 0
    wrong = "models: 'paper_bagel' is an image model (source: images): list it under image_models"
    assert wrong in result.stdout
    assert "image_models: 'static_image' is a video model: list it under models" in result.stdout
    assert not (tmp_path / "results").exists()


def test_the_gallery_sets_each_image_beside_the_same_instances_videos(run):
    """The index's rows carry, after the video model's cell, one cell per image model on the
    image tasks: its image and its verdict (none on block_assembly, which ships no image
    prompt)."""
    index = (run["out"] / "gallery" / "index.html").read_text(encoding="utf-8")
    for model, passes in PASSES.items():
        for instance in INSTANCES:
            task = instance.split("_lv")[0]
            src = f"../paper_{model}/{task}/{instance}/image.png"
            cell = index[index.index(f'src="{src}"') :]
            cell = cell[: cell.index("</td>")]
            assert ("no success" not in cell) == (instance in passes), (model, instance)
    blocks = index[index.index('<tbody data-task="block_assembly">') :]
    blocks = blocks[: blocks.index("</tbody>")]
    assert "image.png" not in blocks and "static_image" in index


def test_the_plan_prices_the_image_judges_calls_and_the_costs_record_them(run):
    """Before the run, the plan counts one call per image (no image to make: published) at
    the judge's token price; after it, tables/costs.csv holds each image model's image judge
    row with the calls its documents record."""
    plan, costs = run["plan"], run["costs"]
    for model in PASSES:
        row = plan.loc[f"paper_{model}"]
        assert (row["videos_done"], row["videos_left"]) == (len(INSTANCES), 0)
        assert row["calls_left"] == len(INSTANCES) and row["gpu_hours_left"] == 0
        assert row["tokens_left"] > 0 and row["cost_left"] > 0
        mine = costs[costs["model"] == f"paper_{model}"].set_index("judge")
        assert mine.loc["image", "calls"] == len(INSTANCES) and mine.loc["image", "cost"] > 0
        assert mine.loc["generate", "calls"] == 0 and mine.loc["generate", "cost"] == 0
