"""Every file the workflow reads back from its outdir, empty and malformed, through the code
that reads it: named with its path, the problem and the fix (OutdirFileError), a cache a
miss with a warning, the status page's documents not made yet; and the one atomic writer.
(The same through real Snakemake runs: tests/workflow/test_outdir_files.py.)"""

from __future__ import annotations

import json
import logging
import os
import stat
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
import torch

from tests.support.workflow import EXAMPLES
from vgi_models.state import write_atomic
from vgi_models.video import write_video
from workflow_scripts.aggregate.agreement import pairs_table
from workflow_scripts.aggregate.collect import collect, instance_table
from workflow_scripts.aggregate.reliability import judge_finals
from workflow_scripts.aggregate.trajectory import trajectory_rows
from workflow_scripts.annotate.items import Item
from workflow_scripts.benchmark.coverage import narrower_run_note
from workflow_scripts.benchmark.image_check import ImageCheck
from workflow_scripts.common import layout
from workflow_scripts.common.files import OutdirFileError, read_csv, read_json, write_json
from workflow_scripts.common.logs import job_log
from workflow_scripts.common.pacing import SharedRateLimit
from workflow_scripts.judge.summary import judge_errors_line
from workflow_scripts.study.documents import Documents
from workflow_scripts.video_api.ledger import read_ledger
from workflow_scripts.video_api.operation import Operation

# (content, what the message says): each file empty, and malformed as it can be
EMPTY = ("", "is empty")
TRUNCATED = ('{"status": "ok", "final": 0.', "is not complete JSON (truncated?")
FOREIGN = ('["a list"]', "holds a JSON list")
BROKEN_JSON = [EMPTY, TRUNCATED, FOREIGN]
INSTANCE, TASK, MODEL = "maze_square_lv1_001", "maze_square", "veo31"


def broken(path, content: str):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content)
    return path


def says(error: pytest.ExceptionInfo, path, problem: str, fix: str) -> None:
    message = str(error.value)
    assert message.startswith(f"{path} {problem}") and f"To fix it: {fix}" in message, message


# -- the reader ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "content, problem",
    [
        *BROKEN_JSON,
        ('{"other": 1}', "lacks status (not a file this workflow wrote)"),
        ("\udcff", "is not UTF-8 text"),
    ],  # fmt: skip
)
def test_read_json_names_the_file_the_problem_and_the_fix(tmp_path, content, problem):
    path = tmp_path / "doc.json"
    path.write_bytes(content.encode("utf-8", "surrogateescape"))
    with pytest.raises(OutdirFileError) as error:
        read_json(path, "do this", ["status"])
    says(error, path, problem, "do this")
    assert isinstance(error.value, ValueError) and error.value.path == path


def test_read_json_missing_file_is_none_only_when_optional(tmp_path):
    assert read_json(tmp_path / "none.json", "fix", optional=True) is None
    with pytest.raises(OutdirFileError, match="none.json does not exist"):
        read_json(tmp_path / "none.json", "fix")
    write_json(tmp_path / "ok.json", {"status": "ok"})
    assert read_json(tmp_path / "ok.json", "fix", ["status"]) == {"status": "ok"}


@pytest.mark.parametrize(
    "content, problem",
    [
        EMPTY,
        ("a,b\n1,2\n", "has the columns a, b, without instance, task"),
        ('a,"b\n1,2\n', "is not a readable table"),
    ],  # fmt: skip
)
def test_read_csv_names_the_file_the_problem_and_the_fix(tmp_path, content, problem):
    path = broken(tmp_path / "t.csv", content)
    with pytest.raises(OutdirFileError) as error:
        read_csv(path, "do this", ["instance", "task"])
    says(error, path, problem, "do this")


# -- each file, through the code that reads it ----------------------------------------


@pytest.mark.parametrize("content, problem", [EMPTY, ("a,b\n1,2\n", "has the columns a, b")])
def test_selected_csv_broken_fails_a_job_but_never_the_parse(tmp_path, content, problem):
    selected = broken(tmp_path / "instances" / "selected.csv", content)
    instances = pd.DataFrame({"task": [TASK]}, index=[INSTANCE])
    note = narrower_run_note(tmp_path, instances, ["tiny_wan22"], ["tiny_wan22"])
    assert note.startswith(f"{selected} {problem}") and "--forcerun select_instances" in note
    with pytest.raises(OutdirFileError) as error:
        instance_table(
            selected, EXAMPLES.parent / "task_names.yaml", EXAMPLES.parent / "overlap.yaml"
        )
    says(error, selected, problem, layout.SELECTED_FIX)


@pytest.mark.parametrize("content, problem", BROKEN_JSON)
def test_generation_json(tmp_path, content, problem):
    meta = broken(layout.run_folder(tmp_path, MODEL, TASK, INSTANCE) / "generation.json", content)
    with pytest.raises(OutdirFileError) as error:
        layout.failed_generation(meta.parent / "video.mp4")
    says(error, meta, problem, layout.GENERATION_FIX)


def judge_fix(folder, rule="judge"):
    return f"delete the folder {folder}, and the next run's rule {rule} writes it again"


@pytest.mark.parametrize("content, problem", BROKEN_JSON)
def test_score_json_in_the_tables_the_finals_and_the_run_summary(tmp_path, content, problem):
    score = broken(layout.score_file(tmp_path, MODEL, TASK, INSTANCE), content)
    fix = judge_fix(layout.judge_folder(tmp_path, MODEL, TASK))
    instances = pd.DataFrame(
        {"task": [TASK], "level": [1], "domain": ["d"], "skills": [[]], "overlap_group": ["g"]},
        index=[INSTANCE],
    )
    for read in (
        lambda: collect(instances, [MODEL], tmp_path, transitions=False),
        lambda: judge_finals(instances, [MODEL], tmp_path, [layout.MAIN]),
        lambda: judge_errors_line([score.parents[1]], [], 0, tmp_path / "errors.csv"),
    ):
        with pytest.raises(OutdirFileError) as error:
            read()
        says(error, score, problem, fix)


def test_a_judge_variants_score_names_its_own_rule(tmp_path):
    score = layout.score_file(tmp_path, MODEL, TASK, INSTANCE, judge="strict")
    folder = tmp_path / "judges" / "strict" / MODEL / TASK / "judge"
    assert layout.stage_fix(score).startswith(judge_fix(folder, "judge_variant"))


@pytest.mark.parametrize("content, problem", BROKEN_JSON)
def test_transitions_json(tmp_path, content, problem):
    labels = broken(layout.transitions_file(tmp_path, MODEL, TASK, INSTANCE), content)
    with pytest.raises(OutdirFileError) as error:
        pairs_table([labels.parent])
    says(error, labels, problem, judge_fix(labels.parent, "label_transitions"))


@pytest.mark.parametrize("content, problem", BROKEN_JSON)
def test_transitions_json_on_the_labelling_page_is_no_vlm_label(tmp_path, capsys, content, problem):
    labels = broken(layout.transitions_file(tmp_path, MODEL, TASK, INSTANCE), content)
    assert Item(MODEL, TASK, INSTANCE, (1, 2), tmp_path).vlm_label() is None  # labelling goes on
    assert f"{labels} {problem}" in capsys.readouterr().err


@pytest.mark.parametrize("content, problem", BROKEN_JSON)
def test_checkpoint_scores_json(tmp_path, content, problem):
    scores = broken(layout.checkpoint_scores_file(tmp_path, MODEL, TASK, INSTANCE), content)
    with pytest.raises(OutdirFileError) as error:
        trajectory_rows([scores.parents[1]])
    says(error, scores, problem, judge_fix(scores.parents[1], "judge_checkpoints"))


def state_path(outdir):
    return outdir / "resume" / MODEL / TASK / INSTANCE / "0123456789abcdef0123.json"


@pytest.mark.parametrize(
    "content, problem",
    [
        *BROKEN_JSON,
        ('{"status": "submitted"}', "lacks operation, submitted_at"),
        ('{"status": "paused"}', "has an unknown status"),
    ],  # fmt: skip
)
def test_an_operation_state_asks_the_user_and_submits_nothing(tmp_path, content, problem):
    state = broken(state_path(tmp_path), content)
    with pytest.raises(OutdirFileError) as error:
        Operation(state, provider=None)  # read before anything is sent
    ledger = tmp_path / "ledger" / MODEL / TASK / INSTANCE
    says(error, state, problem, f"see whether this video was submitted already (the ledger's "
         f"records in {ledger}, the provider's console). If it was, write")  # fmt: skip
    assert "if not, delete the file and the next run submits the video (paid)" in str(error.value)


@pytest.mark.parametrize("content, problem", [*BROKEN_JSON, ('{"model": "m"}', "lacks operation")])
def test_a_ledger_record(tmp_path, content, problem):
    record = broken(
        tmp_path / "ledger" / MODEL / TASK / INSTANCE / "20261204T000000Z.json", content
    )
    with pytest.raises(OutdirFileError) as error:
        read_ledger(tmp_path)
    says(error, record, problem, "nothing writes a ledger record again")


@pytest.mark.parametrize("content, problem", [EMPTY, ('a,"b\n1\n', "is not a readable table")])
def test_a_table_the_plots_read(tmp_path, content, problem):
    table = broken(tmp_path / "tables" / "skills.csv", content)
    with pytest.raises(OutdirFileError) as error:
        read_csv(table, layout.TABLE_FIX)
    says(error, table, problem, layout.TABLE_FIX)


# -- caches, the status page, the pacing window: a miss, never an error ------------------


@pytest.mark.parametrize("content, problem", BROKEN_JSON)
def test_the_image_check_cache_is_a_miss_and_written_again(tmp_path, caplog, content, problem):
    cache = broken(tmp_path / ".snakemake" / "vgi_image_check.json", content)
    image = EXAMPLES / TASK / "input_image" / "lv1" / f"{INSTANCE}.png"
    with caplog.at_level(logging.WARNING), ImageCheck(cache) as check:
        width, height = check.size(image)
    assert f"{cache} {problem}" in caplog.text and "checked again" in caplog.text
    assert list(json.loads(cache.read_text()).values())[0][2:] == [width, height, ""]  # no refusal


@pytest.mark.parametrize("content, problem", BROKEN_JSON)
def test_the_status_page_counts_a_broken_document_as_not_made(tmp_path, content, problem):
    assert Documents().read(broken(tmp_path / "score.json", content)) is None


def test_a_damaged_line_of_the_pacing_window_is_dropped(tmp_path):
    window = broken(tmp_path / "rate", "12.5 1 0\nnot a line\n\n3.0 1")
    SharedRateLimit(window, requests=10).acquire_blocking()
    assert len(window.read_text().splitlines()) == 1  # the new request; the old ones expired


# -- in a job: the message in the log and Snakemake's output, no traceback ----------------


def test_a_job_ends_with_the_message_and_exit_status_1(tmp_path):
    log = tmp_path / "logs" / "job.log"
    with pytest.raises(SystemExit) as ended, job_log(SimpleNamespace(log=[str(log)])):
        read_json(broken(tmp_path / "score.json", ""), "delete it")
    message = f"{tmp_path / 'score.json'} is empty. To fix it: delete it."
    assert ended.value.code == message  # Python prints it, exit status 1
    assert log.read_text() == message + "\n"


# -- the one atomic writer ------------------------------------------------------------


def test_every_write_is_atomic_synced_and_takes_the_umasks_mode(tmp_path):
    """The API's video.mp4 (written by write_atomic) landed 0600 while the rest were 0644."""
    write_atomic(tmp_path / "video.mp4", lambda out: out.write(b"mp4"))
    write_json(tmp_path / "doc.json", {"a": 1})
    mask = os.umask(0o022)
    os.umask(mask)
    for name in ("video.mp4", "doc.json"):
        assert stat.S_IMODE((tmp_path / name).stat().st_mode) == 0o666 & ~mask
    assert sorted(p.name for p in tmp_path.iterdir()) == ["doc.json", "video.mp4"]


def test_a_write_syncs_the_file_then_its_folder_after_the_rename(tmp_path, monkeypatch):
    """The rename is durable too (the ledger is the only trace of a paid submission); the
    temporary name ends `.tmp`, so that a reader's `*.pt` or `*.json` never takes a leftover."""
    synced, fsync = [], os.fsync

    def recording(fd):
        synced.append((Path(os.readlink(f"/proc/self/fd/{fd}")), (tmp_path / "state.pt").exists()))
        fsync(fd)

    monkeypatch.setattr(os, "fsync", recording)
    write_atomic(tmp_path / "state.pt", lambda out: out.write(b"state"))
    (file, renamed_before), (folder, renamed) = synced
    assert file.name.startswith(".state.") and file.suffix == ".tmp" and not renamed_before
    assert folder == tmp_path.resolve() and renamed


def test_a_video_whose_encoding_fails_leaves_the_complete_one_in_place(tmp_path):
    """The mp4 goes through the same writer: an encoder stopped half-way (here by a waveform of
    three channels, after the frames were muxed) leaves the earlier complete file as it was."""
    frames = np.random.default_rng(0).integers(0, 256, (5, 64, 64, 3), dtype=np.uint8)
    video = tmp_path / "video.mp4"
    write_video(frames, video, 8, (torch.zeros(2, 8000), 16000))
    complete = video.read_bytes()
    with pytest.raises(ValueError, match="Expected samples with 2 channels"):
        write_video(frames, video, 8, (torch.zeros(3, 8000), 16000))
    assert video.read_bytes() == complete
    assert [p.name for p in tmp_path.iterdir()] == ["video.mp4"]
