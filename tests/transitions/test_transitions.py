"""Transition labels: the real google-genai client against FakeVLM, human labels, the label
sheet, agreement, and the rules through Snakemake.

The checkpoint videos are 9 frames at 16 fps, like the tiny models', so 4 frames sampled
uniformly are 0, 3, 6 and 8 (t = 0, 3/16, 6/16 and 9/16 s, the end, which maps to the last).
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.support.fake_vlm import FakeVLM, version
from tests.support.scripted_judge import Transitioner, checkpoint_frames, kind
from tests.support.workflow import REPO, default_config, example_instances, snakemake
from vgi_models.video import checkpoint_name, write_video
from workflow_scripts.aggregate.agreement import agreement, label_sheet, pairs_table
from workflow_scripts.benchmark.study import Study, StudyError
from workflow_scripts.common import layout
from workflow_scripts.judge.client import VLMClient
from workflow_scripts.judge.frames import encode_image
from workflow_scripts.judge.settings import Protocol, instance_params
from workflow_scripts.judge.templates import load_templates
from workflow_scripts.transitions.labelling import label_pairs
from workflow_scripts.transitions.labels import LABELS
from workflow_scripts.transitions.settings import load_transitions

STEPS = (1, 2, 3, 4, 10, 20, 40)
PAIRS = [(1, 2), (2, 3), (3, 4), (4, 10), (10, 20), (20, 40)]
TEMPLATES = load_templates(None, ["transition"])
SAMPLED = [(0, 0.0), (3, 0.19), (6, 0.38), (8, 0.5)]  # frame, time as shown (2 decimals)


@pytest.fixture(scope="module")
def denoise(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("run") / "denoise"
    for step in STEPS:
        pixels = np.random.default_rng(step).integers(0, 256, (9, 48, 80, 3), dtype=np.uint8)
        write_video(pixels, folder / checkpoint_name(step, "x0"), 16)
    return folder


@pytest.fixture(scope="module")
def table() -> pd.DataFrame:
    tasks = ["sorting", "clock_running", "maze_square"]  # reference image, text, none
    return example_instances(tasks=tasks, levels=[1])


@pytest.fixture(scope="module")
def study(table, specs) -> Study:
    return Study({"tiny_wan22": specs["tiny_wan22"]}, table, STEPS, "x0")


def instance(table: pd.DataFrame, name: str) -> dict:
    row = table.loc[name]
    return instance_params(row)


@pytest.fixture
def label(tmp_path, monkeypatch):
    """label(responder, instance, denoise, ...) -> (document, requests); cache in tmp_path."""
    monkeypatch.setenv("FAKE_VLM_KEY", "test-key")

    def label(responder, instance, denoise, pairs=PAIRS, human=()):
        with FakeVLM(responder) as fake:
            config = {
                "model": "fake-model",
                "base_url": fake.url,
                "api_key_env": "FAKE_VLM_KEY",
                "max_attempts": 2,
                "backoff_initial_s": 0.01,
                "backoff_max_s": 0.01,
            }

            async def labelled():
                async with VLMClient.from_config(config, tmp_path / "cache") as client:
                    return await label_pairs(
                        client, instance, denoise, pairs, human, 4, Protocol(), TEMPLATES
                    )

            return asyncio.run(labelled()), fake.requests

    return label


def test_one_call_per_pair_shows_references_goal_and_both_checkpoints(label, table, denoise):
    row = instance(table, "sorting_lv1_001")
    document, requests = label(Transitioner({(4, 10): "wrong_to_correct"}), row, denoise)
    assert len(requests) == 6 and {kind(r) for r in requests} == {"transition"}
    references = [encode_image(row["image"]), encode_image(row["gt_image"])]
    shown = set()
    for received in requests:
        assert received.images[:2] == references and len(received.images) == 2 + 2 * 4
        frames = checkpoint_frames(received)
        a, b = frames[0][0], frames[-1][0]
        assert frames == [(step, i, t) for step in (a, b) for i, t in SAMPLED]
        shown.add((a, b))
        text = "\n".join(received.texts)
        assert row["task"] in text and row["goal"] in text
        assert all(f"{n}. {item}" in text for n, item in enumerate(row["checklist"], 1))
        assert all(label in received.texts[-1] for label in LABELS)  # defined after the frames
        assert received.system == TEMPLATES["transition_system.txt"]
    assert shown == set(PAIRS)

    assert document["status"] == "ok" and "reason" not in document
    assert (document["calls"], document["cached_calls"]) == (6, 0) and document["tokens"]["total"]
    assert document["model_version"] == version("fake-model")
    assert [(p["from"], p["to"]) for p in document["pairs"]] == PAIRS
    decided = document["pairs"][3]
    assert decided == {
        "from": 4,
        "to": 10,
        "label": "wrong_to_correct",
        "source": "vlm",
        "evidence": "scripted 4->10",
        "earlier_state": "state at step 4",
        "later_state": "state at step 10",
        "vlm_label": "wrong_to_correct",
        "human_label": None,
    }
    assert {p["label"] for p in document["pairs"] if p is not decided} == {"stable"}


@pytest.mark.parametrize(
    ("name", "reference_text"), [("clock_running_lv1_001", True), ("maze_square_lv1_001", False)]
)
def test_absent_ground_truth_is_left_out(label, table, denoise, name, reference_text):
    row = instance(table, name)
    _, [received] = label(Transitioner(), row, denoise, pairs=[(1, 2)])
    assert received.images[0] == encode_image(row["image"]) and len(received.images) == 1 + 8
    assert not any("Reference solution image" in text for text in received.texts)
    assert any(text.startswith("Reference solution: ") for text in received.texts) is reference_text


def test_human_labels_win_and_the_vlm_label_is_kept(label, table, denoise):
    human = [
        {"from": 2, "to": 3, "label": "correct_to_wrong"},
        {"from": 4, "to": 10, "label": "wrong_to_correct"},
    ]
    responder = Transitioner({(4, 10): "wrong_to_correct"})
    document, requests = label(responder, instance(table, "sorting_lv1_001"), denoise, human=human)
    assert len(requests) == 6  # the VLM is asked about human-labelled pairs too
    by_pair = {(p["from"], p["to"]): p for p in document["pairs"]}
    assert {pair: p["source"] for pair, p in by_pair.items()} == {
        pair: "human" if pair in [(2, 3), (4, 10)] else "vlm" for pair in PAIRS
    }
    overridden = by_pair[2, 3]
    assert (overridden["label"], overridden["human_label"]) == ("correct_to_wrong",) * 2
    assert overridden["vlm_label"] == "stable"
    assert by_pair[4, 10]["vlm_label"] == by_pair[4, 10]["human_label"] == "wrong_to_correct"


def test_a_failed_pair_makes_the_document_an_error(label, table, denoise):
    responder = Transitioner(fail=[(4, 10), (10, 20)])
    human = [{"from": 10, "to": 20, "label": "wrong_to_wrong"}]
    document, requests = label(responder, instance(table, "sorting_lv1_001"), denoise, human=human)
    assert len(requests) == 4 + 2 * 2  # each failing pair tried max_attempts times
    assert document["status"] == "error" and document["calls"] == 8  # every attempt sent
    assert re.fullmatch(r"pair 4->10: reply does not match .*; pair 10->20: .*", document["reason"])
    listed = {(p["from"], p["to"]): p for p in document["pairs"]}
    assert list(listed) == [(1, 2), (2, 3), (3, 4), (10, 20), (20, 40)]  # 4->10 has no label
    kept = listed[10, 20]
    assert (kept["label"], kept["source"], kept["vlm_label"], kept["evidence"]) == (
        "wrong_to_wrong",
        "human",
        None,
        None,
    )


def test_a_rerun_is_served_from_the_cache(label, table, denoise):
    row = instance(table, "sorting_lv1_001")
    first, _ = label(Transitioner(), row, denoise)
    again, requests = label(Transitioner(), row, denoise)
    assert requests == [] and (again["calls"], again["cached_calls"]) == (0, 6)
    assert again["pairs"] == first["pairs"] and again["tokens"] == first["tokens"]


def test_pairs_default_to_consecutive_steps_and_must_be_decoded(study):
    assert list(load_transitions({}, study).pairs) == PAIRS
    chosen = load_transitions({"transitions": {"pairs": [[1, 4], [4, 40]]}}, study)
    assert chosen.pairs == ((1, 4), (4, 40)) and json.loads(chosen.params())["pairs"] == [
        [1, 4],
        [4, 40],
    ]
    with pytest.raises(StudyError) as error:
        load_transitions({"transitions": {"pairs": [[1, 5], [4, 2], [1, 2], [1, 2]]}}, study)
    assert error.value.problems == [
        "transitions.pairs: 1->5: step 5 not in [1, 2, 3, 4, 10, 20, 40]",
        "transitions.pairs: 4->2: the earlier step must come first",
        "transitions.pairs: a pair is listed twice",
    ]


def test_pool_defaults_to_the_papers_four_else_their_tiny_counterparts(table, specs):
    def pool(models, chosen=None):
        study = Study({m: specs[m] for m in models}, table, STEPS, "x0")
        return load_transitions({"transitions": {"pool": chosen}}, study).pool

    assert pool(["tiny_wan22", "tiny_ltx23", "tiny_wan21"]) == ("tiny_wan22", "tiny_ltx23")
    paper = ["wan21_i2v_14b", "ltx23_i2v", "tiny_wan22", "wan22_i2v_a14b"]
    assert pool(paper) == ("wan22_i2v_a14b", "ltx23_i2v")
    assert pool(paper, ["wan21_i2v_14b"]) == ("wan21_i2v_14b",)
    with pytest.raises(StudyError, match=r"transitions.pool: 'vbvr_wan22' is not among"):
        pool(paper, ["vbvr_wan22"])


def write_csv(path: Path, *rows: str) -> Path:
    path.write_text("\n".join(["model,instance,from,to,label", *rows]) + "\n", encoding="utf-8")
    return path


def test_human_labels_are_checked_row_by_row_before_any_job(study, tmp_path):
    bad = write_csv(
        tmp_path / "bad.csv",
        "tiny_wan22,sorting_lv1_001,1,2,stable",
        "tiny_wan99,sorting_lv1_001,2,3,stable",
        "tiny_wan22,sorting_lv9_001,2,3,stable",
        "tiny_wan22,sorting_lv1_001,2,5,stable",
        "tiny_wan22,sorting_lv1_001,3,4,maybe",
        "tiny_wan22,sorting_lv1_001,1,2,wrong_to_wrong",
        "tiny_wan22,sorting_lv1_001,4,10,",  # still to label
    )
    with pytest.raises(StudyError) as error:
        load_transitions({"transitions": {"human_labels": str(bad)}}, study)
    where = f"transitions.human_labels: {bad} line"
    assert error.value.problems == [
        f"{where} 3: unknown model 'tiny_wan99' (this run's: tiny_wan22)",
        f"{where} 4: unknown instance 'sorting_lv9_001' (not among the selected ones)",
        f"{where} 5: unknown pair 2->5 (transitions.pairs: 1->2, 2->3, 3->4, 4->10, 10->20, "
        "20->40)",
        f"{where} 6: unknown label 'maybe' (expected one of unrecognizable, stable, "
        "correct_to_wrong, wrong_to_correct, wrong_to_wrong)",
        f"{where} 7: labels this pair again (first on line 2)",
    ]
    (tmp_path / "columns.csv").write_text("model,instance,label\n")
    for path, problem in [("columns.csv", "missing column(s) from, to"), ("no.csv", "cannot read")]:
        with pytest.raises(StudyError, match=re.escape(problem)):
            load_transitions({"transitions": {"human_labels": str(tmp_path / path)}}, study)

    good = write_csv(
        tmp_path / "good.csv",
        "tiny_wan22,sorting_lv1_001,20,40,wrong_to_correct",
        "tiny_wan22,sorting_lv1_001,1,2,unrecognizable",
        "tiny_wan22,maze_square_lv1_001,1,2,",
    )
    loaded = load_transitions({"transitions": {"human_labels": str(good)}}, study)
    task = ["sorting_lv1_001", "sorting_lv1_002"]  # one task's instances, by instance
    assert json.loads(loaded.human_params("tiny_wan22", task)) == {
        "sorting_lv1_001": [
            {"from": 1, "to": 2, "label": "unrecognizable"},
            {"from": 20, "to": 40, "label": "wrong_to_correct"},
        ]
    }
    assert loaded.human_params("tiny_wan22", ["maze_square_lv1_001"]) == "{}"


def pair(a, b, vlm, human=None) -> dict:
    reading = {"evidence": "e", "earlier_state": "x", "later_state": "y"}
    source = "human" if human else "vlm"
    return {"from": a, "to": b, "label": human or vlm, "source": source, **reading} | {
        "vlm_label": vlm,
        "human_label": human,
    }


def test_the_label_sheet_lists_exactly_the_pairs_without_a_human_label(tmp_path):
    outdir = tmp_path / "results"
    documents = {
        "sorting_lv1_001": [pair(1, 2, "stable", "stable"), pair(2, 3, "wrong_to_correct")],
        "sorting_lv1_002": [pair(1, 2, None, "unrecognizable")],  # 2->3 failed: not listed
    }
    for name, pairs in documents.items():
        path = layout.transitions_file(outdir, "tiny_wan22", "sorting", name)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"status": "ok", "pairs": pairs}))

    folder = layout.stage_folder(outdir, "tiny_wan22", "sorting", "transitions")
    sheet = label_sheet([folder], [(1, 2), (2, 3)], outdir)
    written = sheet.drop(columns=["from_video", "to_video"]).fillna("")  # as in the CSV
    assert written.to_dict("records") == [
        {
            "model": "tiny_wan22",
            "instance": name,
            "task": "sorting",
            "from": 2,
            "to": 3,
            "vlm_label": vlm,
            "label": "",
        }
        for name, vlm in [("sorting_lv1_001", "wrong_to_correct"), ("sorting_lv1_002", "")]
    ]
    run = layout.run_folder(outdir, "tiny_wan22", "sorting", "sorting_lv1_001")
    assert sheet["to_video"].iloc[0] == str(run / "denoise" / "step03.mp4")
    table = pairs_table([folder])
    assert table[["instance", "from", "to", "source"]].values.tolist() == [
        ["sorting_lv1_001", 1, 2, "human"],
        ["sorting_lv1_001", 2, 3, "vlm"],
        ["sorting_lv1_002", 1, 2, "human"],
    ]


def test_agreement_worked_by_hand():
    # 10 pairs, human (rows) x VLM (columns):
    #                   stable  wrong_to_correct  unrecognizable
    # stable               3          1                 0          4
    # wrong_to_correct     1          2                 0          3
    # unrecognizable       0          0                 3          3
    #                      4          3                 3         10
    # p_o = (3 + 2 + 3) / 10 = 0.8; p_e = (4*4 + 3*3 + 3*3) / 100 = 0.34;
    # kappa = (0.8 - 0.34) / (1 - 0.34) = 0.46 / 0.66 = 23/33.
    s, w, u = "stable", "wrong_to_correct", "unrecognizable"
    human = [s, s, s, s, w, w, w, u, u, u, s]
    vlm = [s, s, s, w, w, w, s, u, u, u, None]  # the last pair's VLM call failed: left out
    matrix, kappa = agreement(pd.DataFrame({"human_label": human, "vlm_label": vlm}))
    assert kappa == pytest.approx(23 / 33)
    assert matrix.shape == (5, 5) and matrix.to_numpy().sum() == 10
    assert (matrix.loc[s, s], matrix.loc[s, w], matrix.loc[w, s], matrix.loc[u, u]) == (3, 1, 1, 3)
    empty, undefined = agreement(pd.DataFrame({"human_label": [s], "vlm_label": [None]}))
    assert empty.to_numpy().sum() == 0 and np.isnan(undefined)


def test_rules_label_export_and_measure_agreement(tmp_path, monkeypatch, denoise):
    """Two videos through Snakemake, one human label; generate's outputs are put in place
    (the generate rule has its own tests), so no model runs."""
    monkeypatch.setenv("FAKE_VLM_KEY", "test-key")
    snakefile = tmp_path / "Snakefile"
    rules = [f'include: "{REPO}/rules/{name}.smk"' for name in ("common", "generate", "judge")]
    snakefile.write_text(
        f"import sys\nfrom snakemake.utils import validate\nsys.path.insert(0, {str(REPO)!r})\n"
        f"validate(config, {str(REPO / 'config/schemas/config.schema.yaml')!r})\n"
        + "\n".join([*rules, f'include: "{REPO}/rules/transitions.smk"'])
    )
    out = tmp_path / "results"
    runs = out / "tiny_wan22" / "sorting"
    for name in ("sorting_lv1_001", "sorting_lv1_002"):
        shutil.copytree(denoise, runs / name / "denoise")
        shutil.copy(denoise / "step40.mp4", runs / name / "video.mp4")
        (runs / name / "generation.json").write_text("{}")
    labels = write_csv(tmp_path / "labels.csv", "tiny_wan22,sorting_lv1_001,2,40,wrong_to_correct")
    config = default_config(tmp_path, tasks=["sorting"], levels=[1], subset="full")
    config["denoise"]["steps"] = [1, 2, 40]
    config["transitions"] = {"human_labels": str(labels)}
    targets = ("transitions_all", "export_label_sheet", "label_agreement")
    with FakeVLM(Transitioner()) as fake:
        config["judge"] = {"model": "fake", "base_url": fake.url, "api_key_env": "FAKE_VLM_KEY"}
        # `-s` after the helper's own: argparse keeps the last (a Snakefile adding transitions)
        result = snakemake(tmp_path, config, "-s", str(snakefile), *targets)
        assert result.returncode == 0, result.stdout[-3000:]
        assert len(fake.requests) == 2 * 2  # two videos x pairs 1->2, 2->40

    labelled = layout.transitions_file(out, "tiny_wan22", "sorting", "sorting_lv1_001")
    labelled = json.loads(labelled.read_text())
    assert labelled["status"] == "ok"
    assert [(p["label"], p["source"]) for p in labelled["pairs"]] == [
        ("stable", "vlm"),
        ("wrong_to_correct", "human"),
    ]
    sheet = pd.read_csv(out / "transitions" / "to_label.csv", dtype=str, keep_default_na=False)
    assert sheet[["instance", "from", "to", "vlm_label"]].values.tolist() == [
        ["sorting_lv1_001", "1", "2", "stable"],
        ["sorting_lv1_002", "1", "2", "stable"],
        ["sorting_lv1_002", "2", "40", "stable"],
    ]
    assert json.loads((out / "tables" / "label_agreement.json").read_text()) == {
        "kappa": 0.0,
        "n": 1,
    }

    # Editing one video's human label reruns that video's job only (its calls are cached).
    write_csv(labels, "tiny_wan22,sorting_lv1_001,2,40,wrong_to_wrong")
    dry = snakemake(tmp_path, config, "-s", str(snakefile), "-n", "transitions_all")
    assert re.search(r"^label_transitions\s+1$", dry.stdout, re.M), dry.stdout[-3000:]
