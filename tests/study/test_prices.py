"""GPU-hours priced by GPU type: one price function for the plan, costs.csv and the status
page; a type without a price named under the plan's table; a bad `prices.gpu_hour` refused
before any job."""

from __future__ import annotations

import pandas as pd
import pytest
import yaml

from tests.support.workflow import REPO, default_config, snakemake
from workflow_scripts.common.files import write_json
from workflow_scripts.study.costs import cost_rows
from workflow_scripts.study.documents import Documents, Study
from workflow_scripts.study.plan import plan_table
from workflow_scripts.study.prices import unpriced
from workflow_scripts.study.status import progress, task_instances
from workflow_scripts.study.tally import run_tallies, tally
from workflow_scripts.video_api.ledger import COLUMNS

INSTANCES = {f"sorting_lv1_00{n}": "sorting" for n in range(1, 5)}
PAPER = yaml.safe_load((REPO / "config/paper.yaml").read_text(encoding="utf-8"))


def study_of(tmp_path, gpu_types: dict) -> Study:
    """Local pipelines by run key with their `resources.gpu_type`, 4 instances each, the
    first video of each made in 30 minutes; judged by an unpriced VLM."""
    runs = {key: {"model": key, "kind": "pipeline", "instances": INSTANCES, "main": True,
                  "frames": 9, "fps": 8.0, "runtime_min": 60, "gpu_type": gpu_type}
            for key, gpu_type in gpu_types.items()}  # fmt: skip
    study = Study.from_dict({"outdir": str(tmp_path), "runs": runs, "judged": False,
                             "judges": {"main": {"model": "x", "protocol": {}}}})  # fmt: skip
    for run in study.runs.values():
        made = {"status": "ok", "seconds": {"load": 60, "denoise": 1680, "decode": 60}}
        write_json(study.generation(run, "sorting_lv1_001"), made)
    return study


def priced(study: Study, prices: dict) -> dict[str, pd.Series]:
    """Each run's price as the plan (cost_left: 3 videos left), costs.csv (cost: the video
    made) and the status page (cost, plan_cost) give it."""
    tallies = run_tallies(study, Documents())
    ledger = pd.DataFrame(columns=COLUMNS)
    counts = {key: tally(study, study.runs[key[0]], names, Documents())
              for key, names in task_instances(study).items()}  # fmt: skip
    _, models, _ = progress(study, counts, [], "--cores 1", prices, ledger)
    return {
        "plan": plan_table(study, prices).set_index("model")["cost_left"],
        "costs": cost_rows(study, prices, tallies, ledger).set_index("model")["cost"],
        "status": models.set_index("model")["cost"],
        "status_plan": models.set_index("model")["plan_cost"],
    }


@pytest.mark.parametrize(
    ("gpu_hour", "hourly"),
    [
        ({"h100": 3.0, "h200": 4.0}, {"a": 3.0, "b": 4.0}),
        ({"H100": 3.0, "h200": 4.0}, {"a": 3.0, "b": 4.0}),  # types in any case
        (2.5, {"a": 2.5, "b": 2.5}),  # one number: every GPU
    ],
)
def test_gpu_hours_are_priced_at_their_gpu_types_price_everywhere(tmp_path, gpu_hour, hourly):
    study = study_of(tmp_path, {"a": "h100", "b": "H200"})
    got = priced(study, {"gpu_hour": gpu_hour})
    for key, price in hourly.items():  # half an hour a video
        assert got["plan"][key] == pytest.approx(3 * 0.5 * price)
        assert got["costs"][key] == pytest.approx(0.5 * price)
        assert got["status"][key] == pytest.approx(0.5 * price)
        assert got["status_plan"][key] == pytest.approx(4 * 0.5 * price)
    assert got["plan"]["total"] == pytest.approx(1.5 * sum(hourly.values()))
    assert unpriced(study, {"gpu_hour": gpu_hour}) == []


def test_a_gpu_type_without_a_price_is_named_and_left_out(tmp_path):
    study = study_of(tmp_path, {"a": "h100", "b": "a100", "c": "a100", "d": None})
    prices = {"gpu_hour": {"h100": 3.0}}
    got = priced(study, prices)
    for key in "bcd":
        assert pd.isna(got["plan"][key]) and pd.isna(got["costs"][key])
    assert got["plan"]["total"] == pytest.approx(4.5)  # what is priced: a's
    assert unpriced(study, prices) == [
        "GPU-hours of a100 not priced (prices.gpu_hour): b, c",
        "GPU-hours of models without resources.gpu_type not priced (prices.gpu_hour): d",
    ]
    assert unpriced(study, {"gpu_hour": None}) == [
        "GPU-hours not priced (prices.gpu_hour): a, b, c, d"
    ]


def paper_config(tmp_path, gpu_hour) -> dict:
    """config/paper.yaml's models on the bundled examples, GPU-hours at `gpu_hour`."""
    config = default_config(tmp_path)
    config.update(models=PAPER["models"], image_models=PAPER["image_models"])
    config["prices"] = {**config["prices"], "gpu_hour": gpu_hour}
    return config


def test_the_paper_plan_prices_gpu_hours_by_type_and_names_a_type_unpriced(tmp_path):
    assert PAPER["prices"]["gpu_hour"]["h100"] > 0  # the registry's models run on h100
    result = snakemake(tmp_path, paper_config(tmp_path, PAPER["prices"]["gpu_hour"]), "plan")
    assert result.returncode == 0, result.stdout[-3000:]
    plan = pd.read_csv(tmp_path / "results/plan.csv").set_index("model")
    assert "not priced (" not in (tmp_path / "results/logs/plan.log").read_text()
    gpu = ["wan22_i2v_a14b", "hunyuan15_i2v", "minimax_h3", "ltx23_i2v", "vbvr_wan22"]
    gpu += ["qwen_image_edit", "joyai_image_edit"]
    hours = plan.loc[gpu, "gpu_hours_left"]
    assert (hours > 0).all()
    assert (plan.loc[gpu, "cost_left"] > hours * PAPER["prices"]["gpu_hour"]["h100"]).all()

    result = snakemake(tmp_path, paper_config(tmp_path, {"h200": 3.79}), "plan")
    assert result.returncode == 0, result.stdout[-3000:]
    printed = (tmp_path / "results/logs/plan.log").read_text()  # as the terminal shows it
    assert f"GPU-hours of h100 not priced (prices.gpu_hour): {', '.join(gpu)}" in printed
    tokens_only = pd.read_csv(tmp_path / "results/plan.csv").set_index("model")["cost_left"]
    assert (tokens_only[gpu] < 1).all()  # the judge's tokens only


@pytest.mark.parametrize(
    ("gpu_hour", "error"),
    [
        ("cheap", "config['prices']['gpu_hour']: 'cheap' is not of type 'number', 'object'"),
        ({"h100": "x"}, "config['prices']['gpu_hour']['h100']: 'x' is not of type 'number'"),
        ({"h100": -1}, "config['prices']['gpu_hour']['h100']: -1 is less than the minimum"),
    ],
)
def test_a_bad_gpu_hour_stops_the_run_before_any_job_naming_the_key(tmp_path, gpu_hour, error):
    config = default_config(tmp_path)
    config["prices"]["gpu_hour"] = gpu_hour
    result = snakemake(tmp_path, config, "plan")
    assert result.returncode != 0 and error in result.stdout, result.stdout[-3000:]
    assert not (tmp_path / "results").exists()


def test_prices_by_type_can_be_given_on_the_command_line(tmp_path):
    """`--config` leaves every nested scalar a string; the check types them."""
    result = snakemake(tmp_path, default_config(tmp_path), "plan",
                       "--config", "prices={gpu_hour: {h100: 2.5}}")  # fmt: skip
    assert result.returncode == 0, result.stdout[-3000:]
    printed = (tmp_path / "results/logs/plan.log").read_text()
    assert "GPU-hours of models without resources.gpu_type not priced" in printed


def test_api_models_and_vlms_without_a_price_are_named(tmp_path, registry):
    runs = {
        "veo31": {"kind": "api", "entry": registry["veo31"]},
        "nano_banana_pro": {"kind": "api", "output": "image", "entry": registry["nano_banana_pro"]},
    }
    runs = {key: {"model": key, "instances": INSTANCES, "main": True, **run}
            for key, run in runs.items()}  # fmt: skip
    study = Study.from_dict({"outdir": str(tmp_path), "runs": runs,
                             "judges": {"main": {"model": "vlm-x", "protocol": {}}}})  # fmt: skip
    assert unpriced(study, {}) == [
        "videos of veo31 not priced (prices.video_seconds)",
        "images of nano_banana_pro not priced (prices.images)",
        "tokens of vlm-x not priced (prices.tokens)",
    ]
    config = yaml.safe_load((REPO / "config/config.yaml").read_text(encoding="utf-8"))
    config["prices"]["tokens"]["vlm-x"] = {"input": 1.0, "output": 1.0}
    assert unpriced(study, config["prices"]) == []
