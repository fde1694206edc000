"""Rule publish on a copy of the session's finished default run (tests/workflow/
test_workflow.py): the folder `datasets.load_dataset` reads, a row per video and checkpoint
video, the cards, and rule publish_upload's dry run (tests never upload)."""

from __future__ import annotations

import json
import os

import datasets
import pytest
import yaml

from tests.support.shared import copy_of
from tests.support.workflow import snakemake
from tests.workflow.test_workflow import STEPS, default_study


@pytest.fixture(scope="module")
def published(tmp_path_factory):
    """The copy, and Snakemake's output of `publish publish_upload` on it."""
    study = copy_of(default_study(tmp_path_factory), tmp_path_factory.mktemp("publish") / "run")
    config = yaml.safe_load((study / "config.yaml").read_text(encoding="utf-8"))
    with pytest.MonkeyPatch.context() as env:
        env.setenv("FAKE_VLM_KEY", "test-key")  # the judge is on (nothing left to judge)
        result = snakemake(study, config, "publish", "publish_upload")
    assert result.returncode == 0, result.stdout[-3000:]
    return study, result.stdout


def test_load_dataset_reads_a_row_per_video_and_checkpoint(published, tmp_path):
    study, stdout = published
    assert "rule judge" not in stdout and "rule generate" not in stdout  # only publishing
    results, folder = study / "results", study / "results" / "publish"
    videos = sorted(results.glob("tiny_wan22/*/*/video.mp4"))
    checkpoints = sorted(results.glob("tiny_wan22/*/*/denoise/step*.mp4"))
    assert (len(videos), len(checkpoints)) == (12, 12 * len(STEPS))
    rows = datasets.load_dataset(str(folder), split="train", cache_dir=str(tmp_path))
    assert len(rows) == len(videos) + len(checkpoints)
    assert len(datasets.load_dataset(str(folder), "tiny_wan22", split="train")) == len(rows)
    rows = rows.cast_column("video", datasets.Video(decode=False)).to_pandas()
    final = rows[rows["step"].isna()].set_index("instance")
    scores = {
        path.parent.name: json.loads(path.read_text())
        for path in results.glob("tiny_wan22/*/judge/*/score.json")
    }
    assert set(final.index) == set(scores)
    for instance, row in final.iterrows():
        run = results / "tiny_wan22" / row["task"] / instance
        assert row["score"] == pytest.approx(scores[instance]["final"])
        violations = [item["violations"] for item in row["rubric_items"]]
        assert violations == scores[instance]["violations"] and row["rubric_items"][0]["item"]
        assert row["domain"] and len(row["skills"]) and row["level"] in (1, 2, 3)
        assert os.path.samefile(row["video"]["path"], run / "video.mp4")  # linked, not copied
    steps = rows[rows["step"].notna()]
    assert sorted(set(steps["step"])) == STEPS and steps["score"].isna().all()  # not judged
    labelled = steps[steps["step"] > STEPS[0]]  # each later checkpoint: the pair ending at it
    assert labelled["transition_label"].notna().all()
    assert (labelled["transition_source"] == "vlm").all() and labelled["human_label"].isna().all()
    assert steps[steps["step"] == STEPS[0]]["transition_label"].isna().all()
    assert rows["settings_digest"].nunique() == 1 and (rows["seed"] == 0).all()


def test_the_cards_and_the_dry_run(published):
    study, _ = published
    folder = study / "results" / "publish"
    card = (folder / "README.md").read_text(encoding="utf-8")
    header = yaml.safe_load(card.split("---\n")[1])
    assert header["license"] == "cc-by-nc-4.0"
    assert [c["config_name"] for c in header["configs"]] == ["default", "tiny_wan22"]
    for needed in (
        "gemini-3-flash-preview",
        "12 videos and 84 checkpoint videos",
        "cpu (",
        "seconds per video: load",
        "@misc{he2026vgibench",
        "tiny_wan22/README.md",
    ):
        assert needed in card, needed
    model_card = (folder / "tiny_wan22" / "README.md").read_text(encoding="utf-8")
    assert model_card.startswith("# tiny_wan22: leaderboard card") and "Rank 1 of 1" in model_card
    listing = (study / "results" / "publish_upload.txt").read_text().splitlines()
    assert listing[0].startswith("dry run, nothing sent")
    files = [p for p in folder.rglob("*") if p.is_file() and p.name != ".snakemake_timestamp"]
    files = sorted(p.relative_to(folder).as_posix() for p in files)
    assert (
        listing[1] == f"{len(files)} files, {sum((folder / f).stat().st_size for f in files)} bytes"
    )
    assert [line.split("\t")[1] for line in listing[2:]] == files
