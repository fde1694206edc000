"""bench/gallery_load.py on a small fake study: the index opens in Chromium, filters work."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.support.workflow import REPO


def test_the_bench_builds_the_study_and_times_the_index(tmp_path):
    command = [sys.executable, str(REPO / "bench" / "gallery_load.py"), "--instances", "15"]
    command += ["--models", "2", "--repeats", "1", "--out", str(tmp_path)]
    result = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    figures = json.loads(result.stdout.splitlines()[-1])
    assert figures["instances"] == 15 and figures["models"] == 2
    refused = sum(
        '"error"' in p.read_text() for p in (tmp_path / "results").glob("*/*/*/generation.json")
    )
    assert figures["thumbnail_files"] == 2 * (30 - refused)  # last frame + strip per video
    assert 0 < figures["dom_content_loaded_ms_median"] <= figures["load_ms_median"]
    assert figures["images"] == 15 + figures["thumbnail_files"]
    assert 0 < figures["images_loaded"] <= figures["images"]
    assert figures["shown"].endswith("of 15 instances shown")
