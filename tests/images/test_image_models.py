"""A tiny study of the image branch with image models the workflow makes images with: an
image API (Nano Banana Pro through the real google-genai SDK, against the local double of
its REST protocol) and a local tiny image pipeline, over the bundled examples' tasks that
ship an image prompt, judged by the FakeVLM. The run is killed while the API has requests in
flight, then run again: every request answered before the kill is taken from the kept
replies, never sent again; those the kill cut off may have been paid, so the rerun fails on
them without a request, and `image_api={resubmit: true}` sends each once more."""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import time

import pandas as pd
import pytest
import yaml

from tests.support.fake_vlm import FakeVLM
from tests.support.image_doubles.base import slow
from tests.support.image_doubles.server import API_KEY, FakeImageAPI
from tests.support.scripted_judge import ImageJudge, Judge
from tests.support.workflow import REPO, default_config, snakemake

TASKS = ["clock_running", "sorting"]
INSTANCES = [f"{task}_lv1_00{n}" for task in TASKS for n in (1, 2)]
MODELS = ["tiny_qwen_image_edit", "nano_banana_pro"]
ANSWERED_BEFORE_THE_KILL = 2


def study_config(workdir, fake_image) -> dict:
    registry = yaml.safe_load((REPO / "config" / "models.yaml").read_text(encoding="utf-8"))
    registry["nano_banana_pro"] |= {
        "api_key_env": "FAKE_IMAGE_KEY",
        "base_url": fake_image.base_url("gemini_image"),
    }
    (workdir / "models.yaml").write_text(yaml.safe_dump(registry), encoding="utf-8")
    config = default_config(workdir, tasks=TASKS, levels=[1], subset="full")
    config |= {"models": ["static_image"], "image_models": MODELS}
    config["model_registry"] = str(workdir / "models.yaml")
    return config


def killed_mid_run(workdir, config, fake_image) -> list:
    """`snakemake image_all` as a process of its own, killed (its whole group, SIGKILL) once
    ANSWERED_BEFORE_THE_KILL API requests are answered and more wait on slow replies; the
    requests answered by then."""
    fake_image.script(*[slow(0)] * ANSWERED_BEFORE_THE_KILL, *[slow(60)] * len(INSTANCES))
    path = workdir / "config.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    command = [sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "-d",
               str(workdir), "--configfile", str(path), "--cores", "2", "image_all"]  # fmt: skip
    with open(workdir / "killed.log", "w") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT,
                                   start_new_session=True)  # fmt: skip
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and process.poll() is None:
            answered = [s for s in fake_image.sent if s.status == 200]
            if len(answered) >= ANSWERED_BEFORE_THE_KILL and len(fake_image.sent) > len(answered):
                os.killpg(process.pid, signal.SIGKILL)
                break
            time.sleep(0.1)
        process.wait()
    assert process.returncode == -signal.SIGKILL, (workdir / "killed.log").read_text()[-3000:]
    return answered


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("image_models")
    with (
        pytest.MonkeyPatch.context() as env,
        FakeVLM(ImageJudge(other=Judge(tier=1, violations=[0]))) as fake,
        FakeImageAPI() as fake_image,
    ):
        env.setenv("FAKE_VLM_KEY", "test-key")
        env.setenv("FAKE_IMAGE_KEY", API_KEY)
        config = study_config(workdir, fake_image)
        config["judge"] = {"enabled": True, "base_url": fake.url, "api_key_env": "FAKE_VLM_KEY"}
        plan = snakemake(workdir, config, "plan")
        assert plan.returncode == 0, plan.stdout[-3000:]
        plan = pd.read_csv(workdir / "results" / "plan.csv", index_col="model")
        answered = killed_mid_run(workdir, config, fake_image)
        sent_at_the_kill = len(fake_image.sent)
        unlock = snakemake(workdir, config, "--unlock")
        assert unlock.returncode == 0, unlock.stdout[-3000:]
        fake_image.unscript()  # the rest answered at once
        # as after any kill: a job it cut off (a judge's, if one had started) is incomplete
        result = snakemake(workdir, config, "image_all", "--rerun-incomplete", "--keep-going")
        assert result.returncode != 0 and "it may have been taken and paid" in result.stdout
        first_time = fake_image.sent[sent_at_the_kill:]  # the instances the kill kept unsent
        before = len(fake_image.sent)
        result = snakemake(workdir, config, "image_all", "--config", "image_api={resubmit: true}")
        assert result.returncode == 0, result.stdout[-3000:]
        cut_off = fake_image.sent[len(answered) : sent_at_the_kill]
    return {"out": workdir / "results", "plan": plan, "answered": answered, "cut_off": cut_off,
            "first_time": first_time, "resent": fake_image.sent[before:]}  # fmt: skip


def digest(sent) -> str:
    return hashlib.sha256(sent.prompt.encode() + sent.image).hexdigest()


def test_no_request_answered_before_the_kill_is_sent_again(run):
    answered, cut_off, first_time = run["answered"], run["cut_off"], run["first_time"]
    assert len(answered) == ANSWERED_BEFORE_THE_KILL and cut_off
    # each instance's image asked for once before the user's word: none answered or cut off
    # by the kill was sent by the rerun, which sent only those never sent
    sent = [*answered, *cut_off, *first_time]
    assert sorted(map(digest, sent)) == sorted(set(map(digest, sent)))
    assert len(sent) == len(INSTANCES)
    # then those cut off in flight by the kill, sent once more on the user's word, each once
    assert sorted(map(digest, cut_off)) == sorted(map(digest, run["resent"]))
    for instance in INSTANCES:
        task = instance.rsplit("_lv", 1)[0]
        meta = run["out"] / "nano_banana_pro" / task / instance / "generation.json"
        assert '"status": "ok"' in meta.read_text()


def test_both_models_images_are_judged_and_tabled(run):
    out = run["out"]
    table = pd.read_csv(out / "tables" / "image_success.csv", dtype={"level": str})
    table = table.set_index(["model", "level"])
    for model in MODELS:
        for instance in INSTANCES:
            task = instance.rsplit("_lv", 1)[0]
            assert (out / model / task / instance / "image.png").stat().st_size > 0
            assert (out / model / task / "judge_image" / instance / "score.json").is_file()
        row = table.loc[(model, "1")]
        assert (row["n"], row["errors"]) == (len(INSTANCES), 0)
        assert table.loc[(model, "avg"), "success"] == row["success"]


def test_the_plan_prices_both_models_images_and_their_judgement(run):
    plan = run["plan"]
    local, api = plan.loc["tiny_qwen_image_edit"], plan.loc["nano_banana_pro"]
    assert local["videos_left"] == api["videos_left"] == len(INSTANCES)
    assert local["gpu_hours_left"] > 0 and api["gpu_hours_left"] == 0
    assert local["calls_left"] == api["calls_left"] == len(INSTANCES)  # one judge call each
    # the API's images at 0.134 each (config.yaml's prices.images) beside the judge's tokens
    assert api["cost_left"] > len(INSTANCES) * 0.134
    # before any image: a PNG of the asked-for size (16:9 at 1K: about 1024*1024 pixels) at
    # 12 bits a pixel, three times: the output, and the reply and PNG kept beside the attempt
    png = 1365 * 768 * 12 / 8
    assert api["disk_gb"] == pytest.approx(3 * len(INSTANCES) * png / 1e9, abs=1e-3)
