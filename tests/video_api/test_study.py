"""A tiny study of every shipped video API model (through the doubles) over 6 instances,
one refused and one failed by every provider, judged by the FakeVLM, to tables, gallery and
export; the ledger and tables/costs.csv; settings checked before any job."""

from __future__ import annotations

import json
from html import escape
from pathlib import Path

import decord
import pandas as pd
import pytest
import yaml

from tests.support.fake_video_api import FakeVideoAPI
from tests.support.fake_vlm import FakeVLM
from tests.support.scripted_judge import Judge
from tests.support.video_api_run import KEY_ENV, MODELS, api_config
from tests.support.workflow import EXAMPLES, snakemake
from vgi_models.registry import load_registry
from workflow_scripts.study.prices import cost_per_video
from workflow_scripts.video_api.ledger import COLUMNS, read_ledger
from workflow_scripts.video_api.providers import seconds_of

REFUSED = "sorting_lv2_002"
FAILED = "maze_square_lv3_001"  # an operation made (billed) that ends without a video
VIDEO_KEY = "ak-video-7f3a9c1e:sk-video-3d9b61f0a2c84e7d95b1f3a6c0e2d4b8"  # Kling's: two keys
VLM_KEY = "vlm-key-5b2d8e4f"


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("api_study")
    with (
        pytest.MonkeyPatch.context() as env,
        FakeVideoAPI(api_key=VIDEO_KEY) as fake,
        FakeVLM(Judge(tier=2, violations=[0, 1]), api_key=VLM_KEY) as vlm,
    ):
        env.setenv(KEY_ENV, VIDEO_KEY)
        env.setenv("FAKE_VLM_KEY", VLM_KEY)
        fake.refuse(EXAMPLES / "sorting" / "input_image" / "lv2" / f"{REFUSED}.png")
        fake.refuse(EXAMPLES / "maze_square" / "input_image" / "lv3" / f"{FAILED}.png", "failed")
        config = api_config(workdir, fake)
        config["judge"] = {"enabled": True, "base_url": vlm.url, "api_key_env": "FAKE_VLM_KEY"}
        planned = snakemake(workdir, config, "plan")
        assert planned.returncode == 0 and not fake.requests, planned.stdout[-3000:]
        plan = pd.read_csv(workdir / "results" / "plan.csv").set_index("model")
        result = snakemake(workdir, config)
        assert result.returncode == 0, result.stdout[-3000:]
        dry = snakemake(workdir, config, "-n")
        assert "Nothing to be done" in dry.stdout, dry.stdout[-2000:]
        yield workdir, config, fake, result.stdout, plan


def seconds(config: dict, model: str) -> int:
    """The seconds of video a submission of `model` asks for in the study's registry."""
    entry = yaml.safe_load(Path(config["model_registry"]).read_text())[model]
    return seconds_of(entry["provider"], entry["generation"])


def test_every_instance_is_made_once_judged_tabled_shown_and_exported(study):
    workdir, config, fake, output, _ = study
    results = workdir / "results"
    assert len(fake.submissions) == 6 * len(MODELS)  # 6 instances a model, once each
    selected = pd.read_csv(results / "instances" / "selected.csv")
    assert len(selected) == 6
    for model in MODELS:
        double = fake.doubles[model]
        for row in selected.itertuples():
            run = results / model / row.task / row.instance
            meta = json.loads((run / "generation.json").read_text())
            judged = results / model / row.task / "judge" / row.instance
            score = json.loads((judged / "score.json").read_text())
            exported = results / "eval_res" / model / row.task / f"{model}_{row.instance}.mp4"
            if row.instance in (REFUSED, FAILED):
                kind = "refused" if row.instance == REFUSED else "failed"
                assert meta["status"] == "error" and meta["reason"].startswith(f"{kind}: ")
                assert row.instance == FAILED or double.refusal in meta["reason"]
                assert score["status"] == "error" and score["final"] is None
                assert f"generation failed: {kind}" in score["reason"] and score["calls"] == 0
                assert not exported.exists()
            else:
                assert meta["status"] == "ok" and score["status"] == "ok"
                frames = len(decord.VideoReader(str(run / "video.mp4")))
                assert frames == seconds(config, model) * fake.fps
                assert exported.resolve() == (run / "video.mp4").resolve()
        page = (results / "gallery" / model / "sorting.html").read_text()
        assert "generation failed: refused" in page and escape(double.refusal) in page
    errors = pd.read_csv(results / "tables" / "errors.csv").set_index("model")
    counts = ["selected", "ok", "error", "generation_failed", "transitions_missing"]
    for model in MODELS:
        assert errors.loc[model, counts].tolist() == [6, 4, 2, 2, 0]
    # no checkpoints: no transition rows, and the run says so
    assert pd.read_csv(results / "tables" / "transitions.csv").empty
    assert f"No transition labels or trajectory tables for {', '.join(MODELS)}" in output
    finals = pd.read_csv(results / "tables" / "final_by_domain_level.csv")
    pooled = finals[(finals["domain"] == "overall") & (finals["level"] == "avg")]
    assert pooled.set_index("model").loc[list(MODELS), "n"].tolist() == [4] * len(MODELS)


def test_the_ledger_is_price_times_seconds_per_submission(study):
    workdir, config, fake, *_ = study
    ledger = read_ledger(workdir / "results")
    assert list(ledger.columns) == COLUMNS and len(ledger) == len(fake.billed())
    assert set(ledger["operation"]) == {op.id for op in fake.billed()}  # none it refused outright
    prices = config["prices"]["video_seconds"]
    expected = ledger["model_id"].map(prices) * ledger["seconds"]
    assert (ledger["cost"] - expected).abs().max() < 1e-9
    paid = ledger.groupby("model")["cost"].sum()
    registry = load_registry(yaml.safe_load(Path(config["model_registry"]).read_text()))
    prices = {"video_seconds": prices}
    for model in MODELS:  # the list price of the paper's Table 10 per second asked for
        spec, price = registry[model], fake.doubles[model].price * seconds(config, model)
        assert cost_per_video(spec.provider, spec.model_id, spec.generation, prices) == (
            pytest.approx(price)
        )
        assert paid[model] == pytest.approx(len(fake.billed(spec.provider)) * price)
    print(f"\nledger: {len(ledger)} submissions, {ledger['cost'].sum():.2f} USD")


def test_no_key_reaches_a_file_or_the_log(study):
    workdir, _, fake, output, _ = study
    assert fake.keys == {VIDEO_KEY}
    keys = [VIDEO_KEY, *VIDEO_KEY.split(":"), VLM_KEY]  # Kling's access and secret key apart
    for path in [p for p in workdir.rglob("*") if p.is_file()]:
        data = path.read_bytes()
        assert not any(key.encode() in data for key in keys), path
    assert not any(key in output for key in keys)


def test_bad_settings_and_images_are_named_before_any_submission(tmp_path, monkeypatch):
    monkeypatch.setenv(KEY_ENV, VIDEO_KEY)
    with FakeVideoAPI(api_key=VIDEO_KEY) as fake:
        config = api_config(tmp_path, fake)
        registry = Path(config["model_registry"])
        entries = yaml.safe_load(registry.read_text())
        entries["veo31"]["generation"] |= {"resolution": "4k", "duration_seconds": 5}
        entries["sora2"]["generation"]["size"] = "720x1280"  # portrait: the images are 16:9
        registry.write_text(yaml.safe_dump(entries))
        result = snakemake(tmp_path, config, "generate_all")
        assert result.returncode != 0
        out = result.stdout
        assert "generation.resolution: '4k' is not allowed ('720p', '1080p')" in out
        assert "generation.duration_seconds: 5 is not allowed (4, 6, 8)" in out
        wrong = "input image is 640x360, which does not fit generation.size '720x1280' of model"
        assert f"maze_square_lv1_001: {wrong} 'sora2'" in out
        assert fake.requests == []  # nothing was sent


def test_a_missing_key_is_named_before_any_job(tmp_path, monkeypatch):
    monkeypatch.delenv(KEY_ENV, raising=False)
    with FakeVideoAPI(api_key=VIDEO_KEY) as fake:
        result = snakemake(tmp_path, api_config(tmp_path, fake), "generate_all")
        assert result.returncode != 0
        needs = f"target generate_all needs it for {6 * len(MODELS)} generate_api jobs (API calls)."
        assert f"${KEY_ENV} is not set: {needs}" in result.stdout
        assert "leave the video API models out of `models:`" in result.stdout
        assert "targets without the judge" not in result.stdout  # no judge job lacks a key
        assert fake.requests == [] and not (tmp_path / "results" / "veo31").exists()


def test_the_plan_prices_api_videos_and_costs_take_the_ledger(study):
    """Before the run, the plan's cost_left holds each API model's 6 videos at the price
    table (no GPU-hours); after it, costs.csv's generate row is the ledger's: per provider,
    every submission billed, the failed one and a refused operation included; Seedance's
    refusal, its filter answering the submission itself, is no operation and not billed."""
    workdir, config, fake, *_, plan = study
    video = {m: seconds(config, m) * fake.doubles[m].price for m in MODELS}  # one video's
    costs = pd.read_csv(workdir / "results" / "tables" / "costs.csv")
    ledger = read_ledger(workdir / "results")
    judged = costs[costs["judge"] == "main"].set_index("model")
    made = costs[costs["judge"] == "generate"].set_index("model")
    for model, price in video.items():
        billed = 5 if model == "seedance2" else 6  # refused outright: no task, none billed
        assert len(fake.billed(fake.doubles[model].provider)) == billed
        assert plan.loc[model, ["videos_done", "videos_left"]].tolist() == [0, 6]
        assert plan.loc[model, "gpu_hours_left"] == 0
        assert plan.loc[model, "cost_left"] > 6 * price  # the videos, then the judge's tokens
        assert made.loc[model, "gpu_hours"] == 0
        assert made.loc[model, "calls"] == (ledger["model"] == model).sum() == billed
        assert made.loc[model, "cost"] == pytest.approx(billed * price)
        # judged: called, or from the judge's cache where another double made the same clip
        assert judged.loc[model, ["calls", "cached_calls"]].sum() > 0
    print(f"\nplan before the run:\n{plan.to_string()}\ncosts after it:\n{costs.to_string()}")


def test_the_status_page_shows_a_refusal_with_its_rerun(study):
    workdir, _, fake, *_ = study
    results = workdir / "results"
    status = pd.read_csv(results / "status.csv").set_index(["model", "task"])
    errors = pd.read_csv(results / "status_errors.csv")
    for model in MODELS:
        assert status.loc[(model, "sorting"), ["generated", "judged", "failed"]].tolist() == [
            3,
            2,
            1,
        ]
        mine = errors[errors["model"] == model].set_index("instance")
        assert sorted(mine.index) == sorted([REFUSED, FAILED])
        (error,) = mine.loc[[REFUSED]].reset_index().itertuples()
        assert error.stage == "generate"
        assert fake.doubles[model].refusal in error.reason
        video = results / model / "sorting" / REFUSED / "video.mp4"
        assert error.rerun.startswith(f"snakemake {video} --force --cores 2 --configfile ")
        assert error.rerun.endswith("--config 'video_api={resubmit: true}'")
    page = (results / "status.html").read_text()
    assert all(escape(double.refusal) in page for double in fake.doubles.values())
