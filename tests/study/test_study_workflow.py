"""The plan, the status page and the costs on a tiny study run against FakeVLM.

One generated model (`tiny_wan22`, in 4 denoising steps: checkpoints 1, 2, 4) and one
whose videos were made elsewhere (`ext`), 4 instances each, judged by the main judge and a
variant, the checkpoints at step 2 judged and every checkpoint pair labelled, by the stub
judge (it nominates no frame for round 2, where the plan assumes one per round-1 window
until it has judged videos). The plan made before the run and the plan made after a first
batch (2 videos made, `ext` judged) are held against what the run then sent; the GPU
seconds predicted from the first batch against the rest;
tables/costs.csv against sums over the documents computed here; the status page in
Chromium mid-run and after a failed job, its bars against status.csv (screenshots also
to $VGI_STATUS_SHOTS if set).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from selenium.webdriver.common.by import By

from tests.support.fake_vlm import FakeVLM
from tests.support.scripted_judge import Judge, Transitioner, checkpoint_frames, kind
from tests.support.workflow import REPO, default_config, snakemake
from vgi_models.video import write_video
from workflow_scripts.judge.frames import encode_image

KEY = "test-key-7d1e0b"
INSTANCES = [f"sorting_lv{level}_00{n}" for level in (1, 2) for n in (1, 2)]
PRICES = {
    "currency": "USD",
    "gpu_hour": 2.0,
    "tokens": {"fake-a": {"input": 0.5, "output": 3.0}, "fake-b": {"input": 1.0, "output": 4.0}},
}


def failing(responder, instance: str, pair=(2, 4)):
    """`responder`, but the label of `pair` on `instance` (known by its input image) is
    outside the schema every time: that call fails after its retries."""
    level = instance.split("_")[1]
    image = encode_image(REPO / f"tasks/examples/sorting/input_image/{level}/{instance}.png")

    def respond(received):
        reply = responder(received)
        if kind(received) == "transition" and received.images[0] == image:
            steps = list(dict.fromkeys(step for step, _, _ in checkpoint_frames(received)))
            if (steps[0], steps[-1]) == pair:
                reply = {**reply, "label": "not a label"}
        return reply

    return respond


def write_study(tmp: Path, url: str) -> dict:
    """`ext`'s videos (33 frames at 8 fps) and the config."""
    for k, instance in enumerate(INSTANCES):
        frames = np.full((33, 48, 80, 3), 40 + 40 * k, np.uint8)
        frames[:, :, 4 * k : 4 * k + 3] = 250
        (tmp / "videos/sorting").mkdir(parents=True, exist_ok=True)
        write_video(frames, tmp / "videos/sorting" / f"{instance}.mp4", fps=8)
    registry = yaml.safe_load((REPO / "config/models.yaml").read_text(encoding="utf-8"))
    registry["ext"] = {"source": "videos", "videos": str(tmp / "videos")}
    registry["tiny_wan22"]["generation"]["num_inference_steps"] = 4  # quick: 4 steps
    (tmp / "models.yaml").write_text(yaml.safe_dump(registry, allow_unicode=True))
    config = default_config(tmp, tasks=["sorting"], levels=[1, 2], subset="full")
    config.update(models=["tiny_wan22", "ext"], model_registry=str(tmp / "models.yaml"))
    config["denoise"]["steps"] = [1, 2, 4]
    config["judge"] = {
        "enabled": True,
        "model": "fake-a",
        "base_url": url,
        "api_key_env": "FAKE_STUDY_KEY",
        "backoff_initial_s": 0.01,
        "checkpoints": [2],
    }
    config["judges"] = {"second": {"model": "fake-b"}}
    config["prices"] = PRICES
    return config


def run(tmp: Path, config: dict, *args) -> subprocess.CompletedProcess:
    result = snakemake(tmp, config, *args)
    assert result.returncode == 0, result.stdout[-3000:]
    return result


def seconds(meta: dict) -> float:
    earlier = (meta.get("attempts") or [])[:-1]
    return sum(meta["seconds"].values()) + sum(a["seconds"] for a in earlier)


BARS = """return [...document.querySelectorAll('#models tr')].flatMap(row =>
  [...row.querySelectorAll('.bar')].map(bar => [row.cells[0].textContent,
    bar.dataset.column,
    bar.firstElementChild.getBoundingClientRect().width / bar.getBoundingClientRect().width]))"""


def shoot(browser, page: Path, name: str, tmp: Path) -> tuple[str, list]:
    """Open the status page, screenshot it (to tmp and $VGI_STATUS_SHOTS); return its
    text and its bars (model, column, rendered width / the bar's)."""
    browser.get(page.as_uri())
    shot = tmp / name
    browser.save_screenshot(str(shot))
    if folder := os.environ.get("VGI_STATUS_SHOTS"):
        Path(folder).mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, Path(folder) / name)
    return browser.find_element(By.TAG_NAME, "body").text, browser.execute_script(BARS)


@pytest.fixture(scope="module")
def study(tmp_path_factory, browser):
    """Plan, first batch, plan, the run (mid-run status shot), a failing rerun (shot)."""
    tmp = tmp_path_factory.mktemp("study")
    os.environ["FAKE_STUDY_KEY"] = KEY
    out = tmp / "results"
    facts = {"tmp": tmp, "out": out}
    responder = Transitioner(other=Judge(tier=2, violations=[0, 1]))  # nominates nothing
    responder = failing(responder, INSTANCES[3])  # its 2->4 label: an instance in error
    with FakeVLM(responder, api_key=KEY) as fake:
        config = write_study(tmp, fake.url)
        facts["config"] = config
        run(tmp, config, "plan")
        facts["plan_before"] = pd.read_csv(out / "plan.csv", index_col="model")
        assert not (out / "status.csv").exists()  # the plan makes nothing but the plan
        first = [f"{out}/tiny_wan22/sorting/{i}/video.mp4" for i in INSTANCES[:2]]
        run(tmp, config, *first, f"{out}/ext/sorting/judge")  # a first batch, a judged task
        run(tmp, config, "plan")
        facts["plan_batch"] = pd.read_csv(out / "plan.csv", index_col="model")
        facts["sent_batch"] = {model: sent_calls(out, model) for model in ("tiny_wan22", "ext")}

        path = tmp / "config.yaml"
        command = [sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "-d",
                   str(tmp), "--configfile", str(path), "--cores", "2"]  # fmt: skip
        with open(tmp / "run.log", "w") as log:
            proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
            while proc.poll() is None:  # mid-run: the furthest state with a job running
                status = out / "status.csv"
                written = written_together(out)
                table = pd.read_csv(status) if written else None
                if table is not None and table["running"].iloc[-1]:
                    progress = table[["generated", "calls"]].iloc[-1].tolist()
                    if progress > facts.get("mid_progress", [-1, -1]):
                        facts.update(mid=table, mid_progress=progress)
                        shot = shoot(browser, out / "status.html", "mid_run.png", tmp)
                        facts["mid_page"], bars = shot
                        if written_together(out) == written:  # the page of that table
                            facts.setdefault("mid_bars", []).append((table, bars))
                time.sleep(0.2)
        assert proc.returncode == 0, (tmp / "run.log").read_text()[-3000:]
        facts["requests"] = len(fake.requests)
        facts["sent"] = {model: sent_calls(out, model) for model in ("tiny_wan22", "ext")}
        facts["expected_costs"] = independent_costs(out)
        tokens = facts["expected_costs"].groupby("model")[["input_tokens", "output_tokens"]].sum()
        facts["tokens"] = tokens.sum(axis=1).to_dict()
        facts["status"] = pd.read_csv(out / "status.csv")
        facts["costs"] = pd.read_csv(out / "tables" / "costs.csv")
        facts["log"] = (tmp / "run.log").read_text()

        config["prices"] = {**PRICES, "gpu_hour": 3.5}  # a new price table: nothing reruns
        facts["dry"] = run(tmp, config, "-n").stdout

        # The cache gone and the key refused: the service fails the forced judge job.
        shutil.rmtree(out / "cache")
        os.environ["FAKE_STUDY_KEY"] = "a-refused-key"
        failed = snakemake(tmp, config, "--forcerun", "judge", "--", f"{out}/ext/sorting/judge")
        os.environ["FAKE_STUDY_KEY"] = KEY
        assert failed.returncode != 0
        facts["failed_run"] = failed.stdout
        facts["failed"] = pd.read_csv(out / "status.csv")
        facts["errors"] = pd.read_csv(out / "status_errors.csv")
        page, facts["failed_bars"] = shoot(browser, out / "status.html", "after_failure.png", tmp)
        facts["failed_page"] = page
    return facts


def written_together(out: Path) -> tuple[int, int] | None:
    """The mtimes of status.csv and status.html where the page is of the table: each write
    writes the table, then the page, so a page no older than the table is of that write
    (while neither changes again); None otherwise."""
    try:
        table, page = ((out / name).stat().st_mtime_ns for name in ("status.csv", "status.html"))
    except FileNotFoundError:
        return None
    return (table, page) if page >= table else None


def sent_calls(out: Path, model: str) -> int:
    """Requests the run's documents of `model` record having sent (every stage)."""
    patterns = [
        f"{model}/*/judge/*/score.json",
        f"judges/*/{model}/*/judge/*/score.json",
        f"{model}/*/transitions/*.json",
        f"{model}/*/judge_checkpoints/*/checkpoint_scores.json",
    ]
    paths = [path for pattern in patterns for path in out.glob(pattern)]
    return sum(json.loads(path.read_text())["calls"] for path in paths)


def test_the_plan_learns_its_calls_from_the_first_judged_task(study):
    """Before the run the protocol's estimate stands (one round-2 window per round-1 call:
    above what the stub judge, which nominates nothing, then costs); after `ext`'s judged
    task its documents' rate stands for every judge and model: what the plan then leaves
    plus what was sent is the run's total within 3%."""
    plan, learned, sent = study["plan_before"], study["plan_batch"], study["sent"]
    assert sum(sent.values()) == study["requests"]  # the documents hold every request sent
    for model, calls in sent.items():
        so_far = study["sent_batch"][model]
        after = learned.loc[model, "calls_left"] + so_far
        print(f"{model}: sent {calls} calls; planned before the run "
              f"{plan.loc[model, 'calls_left']}; after the first judged task {so_far} sent "
              f"+ {learned.loc[model, 'calls_left']} left = {after}; tokens planned "
              f"{plan.loc[model, 'tokens_left']}, recorded {study['tokens'][model]}")  # fmt: skip
        assert plan.loc[model, "calls_left"] > 1.10 * calls  # round 2 assumed, none made
        assert abs(after - calls) <= 0.03 * calls
    assert study["sent_batch"]["ext"] > 0 and study["sent_batch"]["tiny_wan22"] == 0
    assert plan.loc["tiny_wan22", "videos_left"] == 4 and plan.loc["ext", "videos_left"] == 0
    assert plan.loc["ext", "gpu_hours_left"] == 0 and plan.loc["ext", "videos_done"] == 4
    assert plan.loc["total", "calls_left"] == plan.loc[["tiny_wan22", "ext"], "calls_left"].sum()
    # registry runtime 15 min a video before any was made: 4 x 0.25 h at 2.0 an hour
    assert plan.loc["tiny_wan22", "gpu_hours_left"] == 1.0


def test_gpu_seconds_predicted_from_a_first_batch(study):
    """The plan after the first 2 videos: their mean seconds for each video left (the
    registry's 15 minutes no longer used), held against the last 2 videos' seconds."""
    out, batch = study["out"], study["plan_batch"]
    assert batch.loc["tiny_wan22", "videos_done"] == 2
    made = [seconds(json.loads((out / "tiny_wan22/sorting" / i / "generation.json").read_text()))
            for i in INSTANCES]  # fmt: skip
    predicted = batch.loc["tiny_wan22", "gpu_hours_left"] * 3600
    assert predicted == pytest.approx(2 * np.mean(made[:2]), abs=0.2)  # hours to 4 digits
    spent = sum(made[2:])
    each = ", ".join(f"{x:.1f}" for x in made)
    print(f"GPU s of the last 2 videos: predicted {predicted:.1f}, spent {spent:.1f} ({each})")
    assert spent / 4 <= predicted <= 4 * spent  # tiny CPU jobs on a shared, loaded machine


def independent_costs(out: Path) -> pd.DataFrame:
    """The costs recomputed from the files: generation seconds, and each document's calls,
    cache hits and tokens (input: prompt, output: total - prompt), priced at PRICES."""
    rows = []

    def add(model, judge, parts, vlm):
        tokens = [p.get("tokens", {}) for p in parts]
        into = sum(t.get("prompt", 0) for t in tokens)
        outof = sum(t.get("total", 0) - t.get("prompt", 0) for t in tokens)
        price = PRICES["tokens"][vlm]
        rows.append({"model": model, "judge": judge, "gpu_hours": 0.0,
                     "calls": sum(p["calls"] for p in parts),
                     "cached_calls": sum(p["cached_calls"] for p in parts),
                     "input_tokens": into, "output_tokens": outof,
                     "cost": (into * price["input"] + outof * price["output"]) / 1e6})  # fmt: skip

    for model in ("tiny_wan22", "ext"):
        metas = [json.loads(p.read_text()) for p in out.glob(f"{model}/*/*/generation.json")]
        hours = sum(map(seconds, metas)) / 3600
        rows.append({"model": model, "judge": "generate", "gpu_hours": hours, "calls": 0,
                     "cached_calls": 0, "input_tokens": 0, "output_tokens": 0,
                     "cost": hours * PRICES["gpu_hour"]})  # fmt: skip
        load = lambda pattern: [json.loads(p.read_text()) for p in out.glob(pattern)]  # noqa: E731
        add(model, "main", load(f"{model}/*/judge/*/score.json"), "fake-a")
        add(model, "second", load(f"judges/second/{model}/*/judge/*/score.json"), "fake-b")
        if model == "tiny_wan22":
            add(model, "labels", load(f"{model}/*/transitions/*.json"), "fake-a")
            documents = load(f"{model}/*/judge_checkpoints/*/checkpoint_scores.json")
            add(model, "checkpoints", [s for d in documents for s in d["steps"]], "fake-a")
    return pd.DataFrame(rows)


def test_costs_equal_the_sums_over_the_documents(study):
    costs, expected = study["costs"], study["expected_costs"]
    assert list(costs.columns) == ["model", "judge", "gpu_hours", "calls", "cached_calls",
                                   "input_tokens", "output_tokens", "cost"]  # fmt: skip
    merged = costs.merge(expected, on=["model", "judge"], suffixes=("", "_expected"))
    assert len(merged) == len(costs) == len(expected) == 8
    for column in ("calls", "cached_calls", "input_tokens", "output_tokens"):
        assert (merged[column] == merged[f"{column}_expected"]).all(), column
    for column in ("gpu_hours", "cost"):
        assert np.allclose(merged[column], merged[f"{column}_expected"], atol=1e-5), column
    assert merged["calls"].sum() == study["requests"] and merged["calls"].gt(0).sum() == 6
    index = (study["out"] / "gallery" / "index.html").read_text(encoding="utf-8")
    assert 'href="../tables/costs.csv"' in index and 'href="../status.html"' in index
    print(costs.to_string(index=False))


def test_status_counts_mid_run_and_at_the_end(study):
    mid, end = study["mid"], study["status"].set_index("model")
    assert mid["running"].iloc[-1] >= 1 and "tiny_wan22" in study["mid_page"]
    assert "Running now" in study["mid_page"] and "Generation left" in study["mid_page"]
    assert "Judge off" not in study["mid_page"] and "Run finished" not in study["mid_page"]
    for model, labelled, failed in (("tiny_wan22", 3, 1), ("ext", 0, 0)):
        row = end.loc[model]
        assert (row["videos"], row["generated"], row["judged"], row["labelled"]) == (
            4, 4, 4, labelled)  # fmt: skip
        assert (row["failed"], row["running"], row["hours_left"]) == (failed, 0, 0)
    assert end.loc["total", "calls"] == study["requests"]
    costs = study["costs"].groupby("model")
    for model in ("tiny_wan22", "ext"):  # the spend so far: the costs' sums at the end
        assert end.loc[model, "cost"] == pytest.approx(costs["cost"].sum()[model], abs=1e-5)
        tokens = costs[["input_tokens", "output_tokens"]].sum().sum(axis=1)[model]
        assert end.loc[model, "tokens"] == tokens
    assert "8 generated, 8 judged, 3 labelled, 1 failed, 0 running" in study["log"]
    assert f"error tiny_wan22 sorting {INSTANCES[3]} (labels): pair 2->4:" in study["log"]


def bar_shares(table: pd.DataFrame) -> dict:
    """(model, column) -> the share each bar should show, from a status.csv."""
    sums = table.groupby("model")[["videos", "generated", "judged", "labelled"]].sum()
    sums.loc["total"] = table.set_index("model").loc["total", sums.columns]
    return {(model, column): sums.loc[model, column] / sums.loc[model, "videos"]
            for model in sums.index for column in ("generated", "judged", "labelled")}  # fmt: skip


def test_the_status_bars_are_the_shares_of_status_csv(study):
    """Each bar's rendered width, over its frame's, is the share status.csv gives: after
    the failed rerun (every video made, `ext`'s judgement failed, 3 of 4 labelled) and
    mid-run (the snapshots whose page and status.csv were the same write)."""
    pages = [(study["failed"], study["failed_bars"]), *study["mid_bars"]]
    assert len(pages) >= 2
    for table, bars in pages:
        shares = bar_shares(table)
        assert len(bars) == 3 * 2 + 2  # made, judged (+ labelled for tiny_wan22): total too
        for model, column, width in bars:
            assert width == pytest.approx(shares[model, column], abs=0.01), (model, column)
    final = {(model, column): round(width, 2) for model, column, width in study["failed_bars"]}
    assert final["ext", "judged"] == 0 and final["tiny_wan22", "labelled"] == 0.75
    assert final["total", "generated"] == 1


def test_failures_are_shown_with_their_reason_and_rerun_command(study):
    status, errors = study["failed"].set_index("model"), study["errors"]
    out = study["out"]
    assert status.loc["ext", "failed"] == 1 and status.loc["ext", "judged"] == 0
    assert status.loc["tiny_wan22", "failed"] == 1
    label, job = errors.itertuples()  # the documents' errors first, then the failed jobs
    assert (label.model, label.instance, label.stage) == ("tiny_wan22", INSTANCES[3], "labels")
    assert label.reason.startswith("pair 2->4: ")
    assert label.rerun.startswith(f"snakemake {out}/tiny_wan22/sorting/transitions --force ")
    assert (job.model, job.task, job.stage) == ("ext", "sorting", "judge")
    assert "401" in job.reason and "a-refused-key" not in job.reason, job.reason
    assert job.rerun.startswith(f"snakemake {out}/ext/sorting/judge --cores 2 --configfile ")
    for error, rule in ((label, "label_transitions"), (job, "judge")):  # each runs as written
        command = [*shlex.split(error.rerun), "-n", "-s", str(REPO / "Snakefile")]
        dry = subprocess.run(command, cwd=study["tmp"], capture_output=True, text=True)
        assert dry.returncode == 0, dry.stdout[-2000:] + dry.stderr[-2000:]
        assert re.search(rf"^{rule}\s+1$", dry.stdout, re.M), dry.stdout[-2000:]
    page = study["failed_page"]
    assert "Errors (2)" in page and job.reason[:40] in page and label.reason[:30] in page
    assert re.search(r"^Run ended .+: 1 job\(s\) failed \(see Errors below\)\.$", page, re.M)
    assert "Generation left" not in page and "time left" not in page


def test_a_new_price_table_and_the_status_page_rerun_nothing(study):
    assert "Nothing to be done" in study["dry"], study["dry"][-2000:]
