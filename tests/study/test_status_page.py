"""The status page of a real run with the judge off (no key): before its first video, no
time left made up from the registry's time limit; the judge off said once, with why;
once the run has ended, that it has and no time left."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time

import pytest
import yaml

from tests.support.workflow import REPO, default_config, examples_without


@pytest.fixture(scope="module")
def pages(tmp_path_factory) -> dict:
    """`generate_all` of tiny_wan22 (4 steps) on one instance, judge key unset: the last
    page written before the video was made while its generate job ran, and the last page."""
    tmp = tmp_path_factory.mktemp("status")
    registry = yaml.safe_load((REPO / "config/models.yaml").read_text(encoding="utf-8"))
    registry["tiny_wan22"]["generation"]["num_inference_steps"] = 4
    (tmp / "models.yaml").write_text(yaml.safe_dump(registry), encoding="utf-8")
    root = examples_without(tmp / "bench", ["sorting"], "sorting_lv1_002")
    config = default_config(tmp, root=str(root), tasks=["sorting"], levels=[1], subset="full")
    config.update(model_registry=str(tmp / "models.yaml"), models=["tiny_wan22"])
    config["denoise"]["steps"] = [1, 2, 4]
    (tmp / "config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    command = [sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "-d",
               str(tmp), "--configfile", str(tmp / "config.yaml"), "--cores", "2",
               "generate_all"]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if k != "GEMINI_API_KEY"}
    out, first = tmp / "results", None
    with open(tmp / "run.log", "w") as log:
        proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env)
        while proc.poll() is None:  # the last page with a job running and no video made
            page = (out / "status.html").read_text() if (out / "status.html").exists() else ""
            if re.search(r"Running now: [1-9]", page) and "<span>0 / 1</span>" in page:
                first = page
            time.sleep(0.1)
    assert proc.returncode == 0, (tmp / "run.log").read_text()[-3000:]
    assert first, "no page written while a job ran before the video was made"
    return {"first": first, "last": (out / "status.html").read_text()}


def test_no_time_left_before_the_first_video(pages):
    """The registry's 15 minutes a video are a time limit, not an estimate: before a video is
    made the page says when it will estimate, with no number."""
    first = pages["first"]
    said = re.search(r"Generation left: ([^.]*)\.", first)[1]
    assert said == "estimated once each model has made a video (none yet: tiny_wan22)"
    assert "<td>after its first video</td>" in first
    shown = re.sub(r"Written [^;]*; reloads every 30 s", "", first)
    assert not re.search(r"\d+ (s|min|h)\b", shown), first


def test_the_judge_off_is_said_once_with_why(pages):
    for page in (pages["first"], pages["last"]):
        notice = (
            "Judge off: $GEMINI_API_KEY is not set, so this run judges and labels no video; "
            "the VLM estimates are what judging would take."
        )
        assert page.count("Judge off") == 1 and notice in page
        assert page.count('<span class="note">judge off</span>') == 4  # judged, labelled x 2
        assert 'data-column="judged"' not in page and 'data-column="labelled"' not in page


def test_the_page_says_the_run_has_finished(pages):
    first, last = pages["first"], pages["last"]
    assert 'http-equiv="refresh"' in first and "Run finished" not in first
    ended = r'<p id="ended">Run finished [\d-]+ [\d:]+ \w+: every job done, none failed\.</p>'
    assert re.search(ended, last), last[:1500]
    for gone in ('http-equiv="refresh"', "Generation left", "time left", "Running now"):
        assert gone not in last, gone
    assert 'data-column="generated" data-share="1.000000"' in last
