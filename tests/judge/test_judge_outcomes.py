"""What a judge job leaves behind: an undecodable video, the end-of-run error line, and
the files' modes."""

from __future__ import annotations

import csv
import json
import stat
import subprocess
import sys
import time

import pytest
from workflow_scripts.jobs import judge_job

from tests.support.fake_vlm import FakeVLM
from tests.support.workflow import EXAMPLES, REPO
from workflow_scripts.common.files import write_json
from workflow_scripts.judge.settings import judge_params
from workflow_scripts.judge.summary import judge_errors_line


def test_an_undecodable_video_is_a_recorded_error_with_the_command_to_regenerate(
    tmp_path, monkeypatch, capsys
):
    monkeypatch.setenv("FAKE_VLM_KEY", "test-key")
    run = tmp_path / "results" / "tiny_wan22" / "sorting" / "sorting_lv1_001"
    run.mkdir(parents=True)
    (run / "video.mp4").write_bytes(b"\x00\x00\x00\x18ftypmp42" + b"cut short" * 50)
    image = next((EXAMPLES / "sorting" / "input_image" / "lv1").glob("*.png"))
    instance = {"goal": "Sort.", "checklist": ["Sorted."], "tier_standard": "0/1/2"}
    instance["gt_text"] = None
    with FakeVLM() as fake:
        client = {"model": "fake", "base_url": fake.url, "api_key_env": "FAKE_VLM_KEY"}
        judge_job(
            [
                *("--video", str(run / "video.mp4"), "--image", str(image)),
                *("--judge", judge_params({}), "--instance", json.dumps(instance)),
                *("--client", json.dumps(client), "--cache", str(tmp_path / "cache")),
                *("--passes", str(run / "judge"), "--score", str(run / "score.json")),
            ]
        )
        assert fake.requests == []
    score = json.loads((run / "score.json").read_text())
    assert score["status"] == "error" and score["final"] is None and score["calls"] == 0
    assert score["reason"].startswith("video unreadable")
    assert f"snakemake --cores 1 --force {run / 'video.mp4'}" in score["reason"]
    assert json.loads((run / "judge" / "rubric.json").read_text())["status"] == "error"


def test_the_run_ends_with_one_line_counting_errors_and_lists_them(tmp_path):
    started = time.time() - 1
    scores = [tmp_path / f"{name}/score.json" for name in "abc"]
    labels = [tmp_path / f"{name}/transitions.json" for name in "abc"]
    statuses = ["ok", "error", "ok", "error", "ok"]
    for path, status in zip(scores + labels[:2], statuses, strict=True):
        write_json(path, {"status": status, "reason": None if status == "ok" else "blocked"})
    listing = tmp_path / "judge_errors.csv"
    line = judge_errors_line(map(str, scores), map(str, labels), started, listing)
    assert line == (
        f"Judge: errors in 1 of 3 scores and 1 of 2 transition labels, listed in {listing}."
    )
    with open(listing, newline="") as rows:
        listed = [(row["kind"], row["file"]) for row in csv.DictReader(rows)]
    assert listed == [("score", str(scores[1])), ("transitions", str(labels[0]))]
    assert judge_errors_line(map(str, scores), [], time.time() + 60, listing) is None

    for path in scores + labels[:2]:
        write_json(path, {"status": "ok"})
    line = judge_errors_line(map(str, scores), map(str, labels), started, listing)
    assert line == "Judge: errors in 0 of 3 scores and 0 of 2 transition labels."
    assert not listing.exists()


@pytest.mark.parametrize("umask", [0o022, 0o002])
def test_json_outputs_honour_the_umask(tmp_path, umask):
    script = (
        "import os, sys; os.umask(int(sys.argv[1], 8))\n"
        "from workflow_scripts.common.files import write_json; write_json(sys.argv[2], {})"
    )
    path = tmp_path / "out.json"
    subprocess.run([sys.executable, "-c", script, f"{umask:o}", str(path)], cwd=REPO, check=True)
    assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~umask
