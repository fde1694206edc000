"""Files of the outdir broken behind the workflow's back, through real Snakemake runs of a
one-video API study judged by the FakeVLM: an empty score.json, a truncated operation
state, a selected.csv of other columns. Each is named with its path and the fix, never
with a traceback; a broken selected.csv never locks the user out (a dry run reads no
outdir file); after the fixes the
rerun completes, paying nothing again. (Every file, empty and malformed, in-process:
tests/common.)"""

from __future__ import annotations

import json
import shutil

from tests.support.fake_video_api import API_KEY, FakeVideoAPI
from tests.support.fake_vlm import FakeVLM
from tests.support.scripted_judge import Judge
from tests.support.video_api_run import KEY_ENV, api_config
from tests.support.workflow import snakemake
from workflow_scripts.common.files import read_json

TASK, INSTANCE = "maze_square", "maze_square_lv1_001"


def said(result, *words: str) -> None:
    """The run said each of `words`, without a traceback."""
    assert "Traceback" not in result.stdout, result.stdout[-3000:]
    for word in words:
        assert word in result.stdout, (word, result.stdout[-3000:])


def test_broken_outdir_files_are_named_with_their_fix_and_the_fixed_rerun_completes(
    tmp_path, monkeypatch
):
    monkeypatch.setenv(KEY_ENV, API_KEY)
    monkeypatch.setenv("FAKE_VLM_KEY", "vlm-key")
    with FakeVideoAPI(polls=1) as fake, FakeVLM(Judge(tier=2, violations=[0, 1])) as vlm:
        config = api_config(tmp_path, fake) | {"models": ["veo31"]}
        config["benchmark"] |= {"tasks": [TASK], "levels": [1]}
        config["judge"] = {"enabled": True, "base_url": vlm.url, "api_key_env": "FAKE_VLM_KEY"}
        first = snakemake(tmp_path, config, "tables")
        assert first.returncode == 0, first.stdout[-3000:]
        results = tmp_path / "results"
        judge = results / "veo31" / TASK / "judge"
        score = judge / INSTANCE / "score.json"
        (state,) = (results / "resume" / "veo31").glob("*/*/*.json")
        paid = (len(fake.submissions), len(vlm.requests))

        # An empty score.json: rule tables names it and the judge folder to delete.
        score.write_text("")
        broken = snakemake(tmp_path, config, "tables", "--forcerun", "tables")
        assert broken.returncode != 0
        said(broken, f"{score} is empty. To fix it: delete the folder {judge}", "rule judge")

        # A truncated operation state: rule generate_api names it and the ledger to look
        # at before deleting it, and submits nothing.
        state.write_text('{"status": "submitted", "operation": "projects/p/op')
        broken = snakemake(tmp_path, config, "generate_all", "--forcerun", "generate_api")
        assert broken.returncode != 0 and len(fake.submissions) == paid[0]
        ledger = results / "ledger" / "veo31" / TASK / INSTANCE
        said(broken, f"{state} is not complete JSON (truncated?", str(ledger), "If it was, write")

        # A selected.csv of other columns: a dry run reads no outdir file and goes on; a
        # run names it and its fix (at its start, and in the job that reads it).
        selected = results / "instances" / "selected.csv"
        selected.write_text("a,b\n1,2\n")
        dry = snakemake(tmp_path, config, "-n", "tables", "--forcerun", "tables")
        assert dry.returncode == 0, dry.stdout[-3000:]
        said(dry, "tables")
        broken = snakemake(tmp_path, config, "tables", "--forcerun", "tables")
        assert broken.returncode != 0
        said(
            broken,
            f"{selected} has the columns a, b, without instance, task",
            "--forcerun select_instances",
        )

        # The fixes: the state written again from the ledger's record, the judge folder
        # deleted, selected.csv written again. The rerun waits on the same operation (no
        # submission), judges from the cache, and completes.
        (record,) = (read_json(path, "") for path in ledger.glob("*.json"))
        keys = ("operation", "submitted_at")
        state.write_text(json.dumps({"status": "submitted"} | {k: record[k] for k in keys}))
        shutil.rmtree(judge)
        fixed = snakemake(tmp_path, config, "tables", "--forcerun", "select_instances")
        assert fixed.returncode == 0, fixed.stdout[-3000:]
        assert len(fake.submissions) == paid[0] and score.is_file()
        assert selected.read_text().startswith("instance,")
        assert len(vlm.requests) == paid[1]  # every judge call of the rerun came from the cache
