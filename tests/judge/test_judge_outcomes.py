"""What a judge job leaves behind: an undecodable video, the end-of-run error line, and
the files' modes."""

from __future__ import annotations

import csv
import json
import stat
import subprocess
import sys
import time
from types import SimpleNamespace

import pytest

from tests.support.fake_vlm import FakeVLM
from tests.support.workflow import EXAMPLES, REPO
from workflow_scripts.common import layout
from workflow_scripts.common.files import write_json
from workflow_scripts.judge.jobs import judge_job
from workflow_scripts.judge.settings import judge_params
from workflow_scripts.judge.summary import judge_errors_line


def test_an_undecodable_video_is_a_recorded_error_with_the_command_to_regenerate(
    tmp_path, monkeypatch, capsys
):
    monkeypatch.setenv("FAKE_VLM_KEY", "test-key")
    where = (tmp_path / "results", "tiny_wan22", "sorting", "sorting_lv1_001")
    run = layout.run_folder(*where)
    run.mkdir(parents=True)
    (run / "video.mp4").write_bytes(b"\x00\x00\x00\x18ftypmp42" + b"cut short" * 50)
    image = next((EXAMPLES / "sorting" / "input_image" / "lv1").glob("*.png"))
    instance = {"goal": "Sort.", "checklist": ["Sorted."], "tier_standard": "0/1/2"}
    instance.update(gt_text=None, image=str(image), gt_image=None)
    out = layout.stage_folder(*where[:3], "judge")
    with FakeVLM() as fake:
        client = {"model": "fake", "base_url": fake.url, "api_key_env": "FAKE_VLM_KEY"}
        judge_job(  # what Snakemake hands rule judge's script
            SimpleNamespace(
                params=SimpleNamespace(judge=judge_params({}), instances={where[3]: instance}),
                input=SimpleNamespace(videos=[str(run / "video.mp4")]),
                output=[str(out)],
                log=[str(tmp_path / "judge.log")],
                config={"outdir": str(where[0]), "judge": client},
            )
        )
        assert fake.requests == []
    score = json.loads(layout.score_file(*where).read_text())
    assert score["status"] == "error" and score["final"] is None and score["calls"] == 0
    assert score["reason"].startswith("video unreadable")
    assert f"snakemake --cores 1 --force {run / 'video.mp4'}" in score["reason"]
    assert json.loads((layout.judged(*where) / "rubric.json").read_text())["status"] == "error"


def test_the_run_ends_with_one_line_counting_errors_and_lists_them(tmp_path):
    started = time.time() - 1
    judged, labelled = [tmp_path / "m/t/judge"], [tmp_path / "m/t/transitions"]
    scores = [judged[0] / f"t_lv1_00{n}/score.json" for n in range(3)]
    labels = [labelled[0] / f"t_lv1_00{n}.json" for n in range(2)]
    statuses = ["ok", "error", "ok", "error", "ok"]
    for path, status in zip(scores + labels, statuses, strict=True):
        write_json(path, {"status": status, "reason": None if status == "ok" else "blocked"})
    listing = tmp_path / "judge_errors.csv"
    line = judge_errors_line(judged, labelled, started, listing)
    assert line == (
        f"Judge: errors in 1 of 3 scores and 1 of 2 transition labels, listed in {listing}."
    )
    with open(listing, newline="") as rows:
        listed = [(row["kind"], row["file"]) for row in csv.DictReader(rows)]
    assert listed == [("score", str(scores[1])), ("transitions", str(labels[0]))]
    assert judge_errors_line(judged, [], time.time() + 60, listing) is None

    for path in scores + labels:
        write_json(path, {"status": "ok"})
    line = judge_errors_line(judged, labelled, started, listing)
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
