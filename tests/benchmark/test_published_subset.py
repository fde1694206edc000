"""config/published.yaml on a fake release whose published folders hold the paper's own half
(one instance per task and level, not the seeded half) minus some files, as the real
release does: `subset: published` selects what the published folders hold, each model is
judged on what its own folder holds, and tables/coverage.csv counts what it lacks, never a
stop; a model whose folder holds none of the selection is named before any job."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import yaml
from PIL import Image

from tests.support.videos import clip, write_videos
from tests.support.workflow import REPO, default_config, snakemake

TASKS = ["block_assembly", "clock_running", "maze_square", "sorting"]
IMAGE_TASKS = TASKS[1:]  # block_assembly ships no image prompt
# The paper's half: one of the two instances of each task and level (not seed 0's draw).
HALF = [f"{task}_lv{lv}_00{1 + (lv + k) % 2}" for k, task in enumerate(TASKS) for lv in (1, 2, 3)]
IMAGE_HALF = [i for i in HALF if i.split("_lv")[0] in IMAGE_TASKS]
# What some published folders lack (the rest hold the whole half).
MISSING_VIDEOS = {
    "seedance2_0": [HALF[0]],
    "veo3_1": [i for i in HALF if i.startswith("clock_running_")],  # a whole task
}
MISSING_IMAGES = {"bagel": [IMAGE_HALF[1], IMAGE_HALF[4]]}


def published(name: str = "published.yaml") -> dict:
    return yaml.safe_load((REPO / "config" / name).read_text(encoding="utf-8"))


def write_release(root) -> tuple:
    """Published videos and images of config/published.yaml's models under `root`, each id's
    folder the half minus its MISSING files; returns (videos_root, images_root)."""
    config = published()
    registry = yaml.safe_load((REPO / "config" / "models.yaml").read_text(encoding="utf-8"))
    videos_root, images_root = root / "video_model_res", root / "image_model_res"
    for k, model in enumerate(config["models"]):
        folder = registry[model]["videos"]
        held = [i for i in HALF if i not in MISSING_VIDEOS.get(folder, [])]
        write_videos(videos_root / folder, {i: clip(k % 8, 30 + 60 * (k // 8)) for i in held})
    for k, model in enumerate(config["image_models"]):
        folder = registry[model]["images"]
        for n, instance in enumerate(IMAGE_HALF):
            if instance in MISSING_IMAGES.get(folder, []):
                continue
            image = np.full((36, 64, 3), 40 + 10 * k, np.uint8)
            image[:4, 4 * n : 4 * n + 4] = 255
            path = images_root / folder / instance.split("_lv")[0] / f"{instance}.png"
            path.parent.mkdir(parents=True, exist_ok=True)
            Image.fromarray(image).save(path)
    return videos_root, images_root


def published_config(workdir, videos_root, images_root) -> dict:
    """config/published.yaml over the default config, on the bundled examples (every task
    and level) and the fake published folders; the judge enabled (a dry run calls none)."""
    config = default_config(workdir)
    mine = published()
    config["benchmark"]["subset"] = mine["benchmark"]["subset"]
    config["benchmark"]["tasks"], config["benchmark"]["levels"] = "all", [1, 2, 3]
    config["models"], config["image_models"] = mine["models"], mine["image_models"]
    config["videos_root"], config["images_root"] = str(videos_root), str(images_root)
    config["judge"] = {"enabled": True, "api_key_env": "FAKE_VLM_KEY"}
    return config


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("published_subset")
    config = published_config(workdir, *write_release(workdir / "eval_res"))
    with pytest.MonkeyPatch.context() as env:
        env.setenv("FAKE_VLM_KEY", "test-key")
        dry = snakemake(workdir, config, "-n")
        done = snakemake(workdir, config, "select_instances", "coverage")
    return {"dry": dry, "done": done, "out": workdir / "results"}


def test_the_published_command_completes_on_a_release_missing_some_files(run):
    assert published()["benchmark"]["subset"] == "published"
    dry = run["dry"]
    assert dry.returncode == 0, dry.stdout[-3000:]
    assert "problem(s) found before scheduling any job" not in dry.stdout
    assert run["done"].returncode == 0, run["done"].stdout[-3000:]
    selected = pd.read_csv(run["out"] / "instances" / "selected.csv")
    assert sorted(selected["instance"]) == sorted(HALF)  # the published folders' instances
    assert set(selected["subset"]) == {"published"}
    # each model imports (and is judged on) the files it holds, no more
    for folder, lacking in MISSING_VIDEOS.items():
        for instance in lacking:
            task = instance.split("_lv")[0]
            assert f"paper_{folder}/{task}/{instance}/video.mp4" not in dry.stdout
    assert "paper_veo3_1/clock_running/judge" not in dry.stdout  # no video of that task
    assert "paper_veo3_1/maze_square/judge" in dry.stdout
    held = HALF[1]
    assert f"paper_seedance2_0/{held.split('_lv')[0]}/{held}/video.mp4" in dry.stdout
    for instance in MISSING_IMAGES["bagel"]:
        assert f"paper_bagel/{instance.split('_lv')[0]}/{instance}/image.png" not in dry.stdout
    assert f"paper_bagel/{IMAGE_HALF[0].split('_lv')[0]}/{IMAGE_HALF[0]}/image.png" in dry.stdout


def test_the_coverage_table_counts_and_lists_what_each_model_lacks(run):
    tables = run["out"] / "tables"
    coverage = pd.read_csv(tables / "coverage.csv", dtype={"level": str})
    coverage = coverage.set_index(["model", "level"])
    config = published()
    for model in config["models"] + config["image_models"]:
        folder = model.removeprefix("paper_")
        lacking = MISSING_VIDEOS.get(folder, MISSING_IMAGES.get(folder, []))
        half = IMAGE_HALF if model in config["image_models"] else HALF
        for level in ("1", "2", "3", "all"):
            ids = [i for i in half if level == "all" or f"_lv{level}_" in i]
            row = coverage.loc[(model, level)]
            gone = len([i for i in lacking if i in ids])
            counts = (row["selected"], row["found"], row["missing"])
            assert counts == (len(ids), len(ids) - gone, gone), (model, level)
    assert coverage.loc[("paper_veo3_1", "all"), "missing_pct"] == pytest.approx(100 * 3 / 12)
    missing = pd.read_csv(tables / "coverage_missing.csv")
    expected = {(f"paper_{f}", i) for f, ids in MISSING_VIDEOS.items() for i in ids}
    expected |= {(f"paper_{f}", i) for f, ids in MISSING_IMAGES.items() for i in ids}
    assert set(zip(missing["model"], missing["instance"], strict=True)) == expected
    looked = missing.set_index("instance")["looked"][HALF[0]]
    assert f"{HALF[0]}.mp4 in " in looked and "seedance2_0" in looked


def test_a_model_folder_holding_none_of_the_selection_is_named_before_any_job(tmp_path):
    videos_root, images_root = write_release(tmp_path / "eval_res")
    for video in (videos_root / "sora2").rglob("*.mp4"):
        video.unlink()
    config = published_config(tmp_path, videos_root, images_root)
    result = snakemake(tmp_path, config, "-n")
    assert result.returncode != 0
    folder = videos_root / "sora2"
    assert f"model 'paper_sora2': its folder {folder} holds no video of the 12 selected" in (
        result.stdout
    )
    assert "paper_veo3_1" not in result.stdout  # lacking some files is no problem
    assert not (tmp_path / "results").exists()


def test_the_published_subset_needs_the_published_folders(tmp_path):
    config = published_config(tmp_path, tmp_path / "nowhere", tmp_path / "nowhere_either")
    config["models"], config["image_models"] = ["static_image"], []
    config["videos_root"] = config["images_root"] = None
    result = snakemake(tmp_path, config, "-n")
    assert result.returncode != 0
    assert (
        "benchmark.subset: 'published' reads the instances the paper judged from the "
        "published generations, but neither videos_root nor images_root is set"
    ) in result.stdout
    config["videos_root"] = str(tmp_path / "nowhere")
    result = snakemake(tmp_path, config, "-n")
    assert result.returncode != 0
    assert f"but videos_root ({tmp_path / 'nowhere'}) is not a folder" in result.stdout
    (tmp_path / "empty" / "some_model").mkdir(parents=True)
    config["videos_root"] = str(tmp_path / "empty")
    result = snakemake(tmp_path, config, "-n")
    assert result.returncode != 0
    assert "benchmark.subset: 'published': no model folder under videos_root" in result.stdout
    assert not (tmp_path / "results").exists()


def test_the_gallery_and_export_take_each_model_on_what_it_holds(tmp_path):
    """Without the judge: a model lacking a whole task (veo3_1's clock_running) has no page
    of it; the others have theirs; the official export holds what each model holds."""
    config = published_config(tmp_path, *write_release(tmp_path / "eval_res"))
    config["judge"] = {"enabled": False}
    config["models"], config["image_models"] = ["paper_veo3_1", "paper_seedance2_0"], []
    result = snakemake(tmp_path, config, "gallery", "export_official_all")
    assert result.returncode == 0, result.stdout[-3000:]
    gallery, export = tmp_path / "results" / "gallery", tmp_path / "results" / "eval_res"
    assert not (gallery / "paper_veo3_1" / "clock_running.html").exists()
    assert (gallery / "paper_veo3_1" / "maze_square.html").is_file()
    assert (gallery / "paper_seedance2_0" / "clock_running.html").is_file()
    held = {p.stem for p in (export / "paper_seedance2_0").rglob("*.mp4")}
    assert held == {f"paper_seedance2_0_{i}" for i in HALF[1:]}
