"""Rules judge_reliability and judge_agreement through Snakemake against FakeVLM: four
models' videos made elsewhere, the main judge and two variants, the hand-computed case of
test_reliability written by the rule, and the calls a variant adds and the cache saves."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from tests.aggregate.test_reliability import PREFERENCES, QUALITY
from tests.judge.test_judge_workflow import jobs
from tests.support.fake_vlm import FakeVLM, Received, version
from tests.support.scripted_judge import Judge, kind
from tests.support.shared import shared_folder
from tests.support.videos import videos_config, write_videos
from tests.support.workflow import default_config, snakemake
from workflow_scripts.judge import drift
from workflow_scripts.judge.templates import HERE as TEMPLATES

KEY = "test-key-71b0"
MODELS = {"A": "ext_a", "B": "ext_b", "C": "ext_c", "D": "ext_d"}
TASKS = ["sorting", "clock_running", "maze_square"]
QUALITY_SAID = re.compile(r"quality (\d)")


class Graded(Judge):
    """A scripted judge reading a video's quality q (0..4) off its flat grey level
    (30 + 50 q): tier 2 and q violations on every checklist item, so final = 1 / (q + 1).
    Each window comment names the video (its stripe, its instance's image): no two
    videos' verdict calls are equal.
    The model `fake-reversed` reads 4 - q (a judge that gets people backwards)."""

    def __init__(self):
        super().__init__(tier=2, violations=[0])

    def __call__(self, received: Received) -> dict:
        reply = super().__call__(received)
        what = kind(received)
        if what.startswith("window"):
            frame = np.asarray(Image.open(io.BytesIO(received.images[-1])).convert("L"), float)
            q = int(round((np.median(frame) - 30) / 50))
            q = 4 - q if received.model == "fake-reversed" else q
            stripe = int(frame.mean(axis=0).argmax() * 8 // frame.shape[1])  # the model
            comment = reply["evaluations"][0]["comment"]  # names the instance's image
            reply["evaluations"][0]["comment"] = f"quality {q} of video {stripe}, {comment}"
        elif what == "polish":
            q = int(next(m[1] for t in received.texts if (m := QUALITY_SAID.search(t))))
            for item in reply["checklist"]:
                item["n_violations"] = q
        return reply


def write_study(tmp_path) -> dict:
    """Four models' 9-frame videos of every level-1 instance of TASKS, each a flat grey
    of its quality (QUALITY, else 0) with a thin stripe where the model is (the cache
    would take equal videos of one instance for one), and the config on them."""
    folders = {}
    for k, (letter, model) in enumerate(MODELS.items()):
        videos = {}
        for instance in (f"{task}_lv1_00{n}" for task in TASKS for n in (1, 2)):
            q = QUALITY.get(instance, {}).get(letter, 0)
            videos[instance] = np.full((9, 32, 64, 3), 30 + 50 * q, np.uint8)
            videos[instance][:, :, 8 * k + 2 : 8 * k + 6] += 20
        folders[model] = write_videos(tmp_path / "videos" / model, videos)
    return videos_config(tmp_path, folders, tasks=TASKS, levels=[1], subset="full")


def write_preferences(path) -> None:
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["instance", "model_a", "model_b", "preferred", "annotator"])
        for instance, a, b, preferred, annotator in PREFERENCES:
            writer.writerow([instance, MODELS[a], MODELS[b], preferred, annotator])


def build_judged_study(folder: Path) -> None:
    """The study judged by main, then with two variants the tables, in `folder` (outdir
    `results`, relative: a copy is the same finished run): what the FakeVLM was asked in
    each phase (model, kind, first text) in `requests.json`, and each Snakemake call's exit
    status and output in `runs.json`."""
    config = write_study(folder) | {"outdir": "results"}
    prompts = folder / "prompts"
    prompts.mkdir()
    verdict = (TEMPLATES / "verdict.txt").read_text(encoding="utf-8")
    (prompts / "verdict.txt").write_text("# Count strictly\n" + verdict, encoding="utf-8")
    write_preferences(folder / "preferences.csv")
    with pytest.MonkeyPatch.context() as env, FakeVLM(Graded()) as fake:
        env.setenv("FAKE_VLM_KEY", KEY)
        config["judge"] = {
            "enabled": True,
            "model": "fake-model",
            "base_url": fake.url,
            "api_key_env": "FAKE_VLM_KEY",
        }
        main = snakemake(folder, config, "judge_all")
        main_requests = list(fake.requests)
        config["judges"] = {
            "reversed": {"model": "fake-reversed"},
            "strict_verdict": {"prompts": str(prompts)},
        }
        config["judge_reliability"] = {"preferences": str(folder / "preferences.csv")}
        tables = snakemake(folder, config, "judge_reliability", "judge_agreement")
        variant_requests = fake.requests[len(main_requests) :]
        targets = ("judge_all", "judges_all", "judge_reliability", "judge_agreement")
        again = snakemake(folder, config, "-n", *targets)
        everything = snakemake(folder, config, "-n")
    seen = {
        phase: [{"model": r.model, "kind": kind(r), "first_text": r.texts[0]} for r in requests]
        for phase, requests in (("main", main_requests), ("variants", variant_requests))
    }
    (folder / "requests.json").write_text(json.dumps(seen), encoding="utf-8")
    runs = {"main": main, "tables": tables, "again": again, "everything": everything}
    runs = {name: {"returncode": r.returncode, "stdout": r.stdout} for name, r in runs.items()}
    (folder / "runs.json").write_text(json.dumps(runs), encoding="utf-8")


def judged_study(tmp_path_factory) -> Path:
    """The folder of the session's judged study (`build_judged_study`), shared with
    tests/annotate/test_preferences.py: read it, or copy it to write."""
    return shared_folder(tmp_path_factory, "judged_study", build_judged_study)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """The judged study's folder, the FakeVLM's requests by phase, and Snakemake's outputs."""
    folder = judged_study(tmp_path_factory)
    requests = json.loads((folder / "requests.json").read_text(encoding="utf-8"))
    runs = json.loads((folder / "runs.json").read_text(encoding="utf-8"))
    results = [SimpleNamespace(**runs[name]) for name in ("main", "tables", "again", "everything")]
    return folder, requests["main"], requests["variants"], tuple(results)


def test_variants_judged_with_the_cache_and_nothing_left_to_do(run):
    tmp_path, main_requests, variant_requests, (main, tables, again, everything) = run
    assert main.returncode == 0, main.stdout[-3000:]
    assert tables.returncode == 0, tables.stdout[-3000:]
    assert "rule judge:" not in tables.stdout  # the main judge's documents reused

    def kinds(requests):
        return {
            k: sum(r["kind"] == k for r in requests) for k in ("completeness", "window1", "polish")
        }

    # 24 videos, 3 calls each (completeness, one window, the verdict)
    assert kinds(main_requests) == dict.fromkeys(("completeness", "window1", "polish"), 24)
    reversed_calls = [r for r in variant_requests if r["model"] == "fake-reversed"]
    shared = [r for r in variant_requests if r["model"] == "fake-model"]
    assert kinds(reversed_calls) == kinds(main_requests)  # a new model: every call new
    # the new verdict template alone: only the 24 verdicts new, the 48 others cached
    assert kinds(shared) == {"completeness": 0, "window1": 0, "polish": 24}
    assert all(r["first_text"].startswith("# Count strictly") for r in shared)
    assert len(variant_requests) == 72 + 24
    assert "Nothing to be done" in again.stdout, again.stdout[-2000:]
    # `all` asks for the tables (done: no judge, variant or table job left for them)
    assert "tables/judge_reliability.csv" in everything.stdout
    assert "tables/judge_agreement.csv" in everything.stdout
    left = jobs(everything.stdout)
    assert not {"judge", "judge_variant", "judge_reliability", "judge_agreement"} & set(left)
    # with human preferences, tables/vs_paper.csv sets the judges beside Tables 3, 14, 15
    tables_inputs = re.search(r"rule tables:\n\s+input: (.*)", everything.stdout).group(1)
    assert "tables/judge_reliability.csv" in tables_inputs
    assert "tables/judge_reliability_by_slice.csv" in tables_inputs


def test_the_rule_writes_the_hand_computed_case(run):
    tmp_path = run[0]
    table = pd.read_csv(tmp_path / "results/tables/judge_reliability.csv").set_index("judge")
    assert list(table.index) == ["main", "reversed", "strict_verdict"]
    for judge in ("main", "strict_verdict"):  # the stricter verdict template: same counts here
        row = table.loc[judge]
        assert row["auc"] == pytest.approx(0.96) and row["pairwise_accuracy"] == pytest.approx(
            5 / 7
        )
        assert (row["n_pairs"], row["n_strict_pairs"]) == (7, 5)
    assert table.loc["reversed", "auc"] < 0.5
    assert table.loc["reversed", "judge_model"] == "fake-reversed"  # each row: its judge's
    assert table.loc["reversed", "judge_model_version"] == version("fake-reversed")
    by_slice = pd.read_csv(tmp_path / "results/tables/judge_reliability_by_slice.csv")
    main = by_slice[by_slice.judge == "main"].set_index(["slice_kind", "slice"])
    assert main.loc[("domain", "spatiotemporal_dynamics"), "auc"] == pytest.approx(0.75)
    assert main.loc[("skill", "temporal"), "pairwise_accuracy"] == pytest.approx(1 / 3)
    assert main.loc[("skill", "planning"), "n_pairs"] == 4
    pairs = pd.read_csv(tmp_path / "results/tables/preference_pairs.csv")
    assert len(pairs) == 7
    assert (tmp_path / "results/plots/judge_reliability.png").stat().st_size > 0
    log = (tmp_path / "results/logs/judge_reliability.log").read_text()
    assert "7 preference pairs; dropped: 1 contradicted, 3 on cycles, 0 outside this run" in log


def test_judge_agreement_without_people(run):
    tmp_path = run[0]
    table = pd.read_csv(tmp_path / "results/tables/judge_agreement.csv")
    assert list(table.columns) == [
        "judge_a",
        "judge_b",
        "spearman",
        "kendall",
        "pairwise_agreement",
        "n",
        *drift.COLUMNS,
    ]
    # each row names both judges' models and versions, and says neither is the paper's
    first = table.iloc[0]
    assert (first.judge_model, first.judge_model_version) == (
        "fake-model / fake-reversed",
        f"{version('fake-model')} / {version('fake-reversed')}",
    )
    assert first.judge_note == (
        "main: judge fake-model is not the paper's (gemini-3-flash-preview); "
        "reversed: judge fake-reversed is not the paper's (gemini-3-flash-preview)"
    )
    rows = table.set_index(["judge_a", "judge_b"])
    assert list(rows.index) == [
        ("main", "reversed"),
        ("main", "strict_verdict"),
        ("reversed", "strict_verdict"),
    ]
    same = rows.loc[("main", "strict_verdict")]
    assert (same["spearman"], same["kendall"], same["pairwise_agreement"], same["n"]) == (
        1,
        1,
        1,
        24,
    )
    assert rows.loc[("main", "reversed"), "spearman"] == pytest.approx(-1.0)
    by_slice = pd.read_csv(tmp_path / "results/tables/judge_agreement_by_slice.csv")
    assert set(by_slice["slice_kind"]) == {"domain", "skill"}


def test_judge_reliability_without_people_is_an_error_saying_what_to_set(tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_VLM_KEY", KEY)
    config = default_config(tmp_path)
    config["judge"] = {"enabled": True, "api_key_env": "FAKE_VLM_KEY"}
    result = snakemake(tmp_path, config, "-n", "judge_reliability")
    assert result.returncode != 0
    assert "judge_reliability needs human preferences: set judge_reliability.preferences" in (
        result.stdout
    )
    plain = snakemake(tmp_path, config, "-n")  # and `all` does not ask for it
    assert plain.returncode == 0, plain.stdout[-2000:]
    assert not {"judge_reliability", "judge_agreement", "judge_variant"} & set(jobs(plain.stdout))
