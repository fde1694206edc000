"""The sensitivity studies end to end through Snakemake on the test double: a `subset: full`
run through `all` (a release of three level-1 instances: two of clock_running, one of
sorting), then the same run with a line-art and an oracle-prompt condition (their folders
made by tasks/make_conditions.py) and a second seed added, which reruns nothing of the
main run. The model makes each run's instances in batches (`resources.batch`)."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys

import pandas as pd
import pytest
import yaml

from tests.support.fake_vlm import FakeVLM
from tests.support.scripted_judge import Judge, Transitioner, kind
from tests.support.workflow import REPO, default_config, examples_without, snakemake
from workflow_scripts.benchmark.instances import select_subset

TASKS = ["clock_running", "sorting"]  # clock_running's oracle prompts: the release's references
ORACLE = ["clock_running_lv1_001", "sorting_lv1_002"]  # two of the three instances


class ByVideo(Judge):
    """Scripted, but each video gets its own tier: from a hash of the frames it shows."""

    def __call__(self, received):
        reply = super().__call__(received)
        if kind(received) == "completeness":
            digest = hashlib.sha256(b"".join(received.images)).digest()
            reply["tier"] = digest[0] % 3
        return reply


def make(kind_, root, out, *args):
    command = [sys.executable, str(REPO / "tasks" / "make_conditions.py"), kind_]
    subprocess.run([*command, str(root), str(out), *args], check=True, capture_output=True)


def stamps(results):
    """Every file of the main run (videos, checkpoints, judge documents): mtime by path."""
    paths = [p for p in (results / "tiny_wan22").rglob("*") if p.is_file()]
    return {str(p): p.stat().st_mtime_ns for p in paths}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("sensitivity")
    root = examples_without(workdir / "release", TASKS, "sorting_lv1_001")  # 3 instances
    config = default_config(workdir, root=str(root), tasks=TASKS, levels=[1], subset="full")
    registry = yaml.safe_load((REPO / "config" / "models.yaml").read_text(encoding="utf-8"))
    registry["tiny_wan22"]["generation"]["num_inference_steps"] = 2  # quick: 2 steps
    registry["tiny_wan22"]["resources"]["batch"] = 3  # each run's instances: one job, one load
    (workdir / "models.yaml").write_text(yaml.safe_dump(registry), encoding="utf-8")
    config["model_registry"] = str(workdir / "models.yaml")
    config["denoise"]["steps"] = [1, 2]
    config["transitions"] = {"frames_per_checkpoint": 2}
    out = {"workdir": workdir}
    with pytest.MonkeyPatch.context() as env, FakeVLM(Transitioner(other=ByVideo(1, [0]))) as fake:
        env.setenv("FAKE_VLM_KEY", "test-key")
        config["judge"] = {"enabled": True, "base_url": fake.url, "api_key_env": "FAKE_VLM_KEY"}
        first = snakemake(workdir, config)
        assert first.returncode == 0, first.stdout[-3000:]
        out["main"] = stamps(workdir / "results")
        out["tables_main"] = {
            name: pd.read_csv(workdir / "results" / "tables" / f"{name}.csv")
            for name in ("final_by_domain_level", "subset_stability")
        }

        make("line-art", root, workdir / "lineart", "--tasks", *TASKS)
        solutions = workdir / "solutions.yaml"
        steps = "[Pick the tallest bar., Move it to the right end.]"
        solutions.write_text(f"sorting_lv1_002: {steps}\n")
        make("oracle", root, workdir / "oracle", "--tasks", *TASKS, "--solutions", str(solutions))
        config["conditions"] = {
            "lineart": {"images": str(workdir / "lineart"), "tasks": ["sorting"]},
            "oracle": {"prompts": str(workdir / "oracle"), "instances": ORACLE},
        }
        config["seeds"] = [0, 1]
        second = snakemake(workdir, config)
        assert second.returncode == 0, second.stdout[-3000:]
        out["log"] = second.stdout
        out["after"] = stamps(workdir / "results")
    return out


def test_adding_conditions_and_a_seed_reruns_nothing_of_the_main_run(runs):
    log = runs["log"]  # the second run's: each job it ran, with its outputs
    generated = [line for line in log.splitlines() if "output:" in line and "video.mp4" in line]
    keys = {line.split("/results/")[1].split("/")[0] for line in generated}
    assert keys == {
        "tiny_wan22@seed1",
        "tiny_wan22@lineart",
        "tiny_wan22@lineart@seed1",
        "tiny_wan22@oracle",
        "tiny_wan22@oracle@seed1",
    }
    assert all(runs["after"][path] == stamp for path, stamp in runs["main"].items())


def test_conditions_table_compares_each_condition_with_default_on_its_instances(runs):
    results = runs["workdir"] / "results"
    table = pd.read_csv(results / "tables" / "conditions.csv")
    assert table.columns[:2].tolist() == ["model", "condition"]
    assert table["condition"].tolist() == ["default", "lineart", "oracle"]
    assert table["n"].tolist() == [3, 1, 2] and table["n_paired"].tolist()[1:] == [1, 2]

    def finals(key, task="*"):  # each instance's mean over seeds 0 (plain key) and 1
        found = {}
        for seed_key in (key, f"{key}@seed1"):
            for path in results.glob(f"{seed_key}/{task}/judge/*/score.json"):
                found.setdefault(path.parent.name, []).append(json.loads(path.read_text())["final"])
        assert all(len(v) == 2 for v in found.values())
        return pd.Series({k: sum(v) / 2 for k, v in found.items()})

    default, oracle = finals("tiny_wan22"), finals("tiny_wan22@oracle")
    assert sorted(oracle.index) == ORACLE
    row = table.set_index("condition").loc["oracle"]
    assert row.final == pytest.approx(oracle.mean())
    assert row.final_diff == pytest.approx((oracle - default[oracle.index]).mean())
    assert row.final_diff_ci_low <= row.final_diff <= row.final_diff_ci_high
    by_task = pd.read_csv(results / "tables" / "conditions_by_task.csv")
    assert set(zip(by_task.condition, by_task.task, strict=True)) == {
        ("default", "clock_running"),
        ("default", "sorting"),
        ("lineart", "sorting"),
        ("oracle", "clock_running"),
        ("oracle", "sorting"),
    }
    assert (results / "plots" / "conditions.png").stat().st_size > 1000
    print(table.to_string())


def test_tables_average_seeds_and_split_their_variance(runs):
    results = runs["workdir"] / "results"
    overall = pd.read_csv(results / "tables" / "final_by_domain_level.csv")
    overall = overall.query("model == 'tiny_wan22' and domain == 'overall' and level == 'avg'")
    finals = [
        json.loads(p.read_text())["final"]
        for key in ("tiny_wan22", "tiny_wan22@seed1")
        for p in results.glob(f"{key}/*/judge/*/score.json")
    ]
    assert len(finals) == 6 and overall["n"].item() == 3  # 3 instances, each over 2 seeds
    assert overall["final"].item() == pytest.approx(sum(finals) / 6)
    variance = pd.read_csv(results / "tables" / "seed_variance.csv").set_index("model")
    got = variance.loc["tiny_wan22"]
    assert (got.seeds, got.n) == (2, 3)
    assert got.share_seed + got.share_instance == pytest.approx(1.0) or pd.isna(got.share_seed)
    errors = pd.read_csv(results / "tables" / "errors.csv").set_index("model")
    assert errors.loc["tiny_wan22", "selected"] == 6  # every seed's video counted


def test_subset_stability_half_column_is_the_mean_over_the_selected_ids(runs):
    results = runs["workdir"] / "results"
    table = runs["tables_main"]["subset_stability"]
    selected = pd.read_csv(results / "instances" / "selected.csv", dtype={"id": str})
    half = select_subset(selected.set_index("instance"), "half", 0).index
    assert len(selected) == 3 and len(half) == 2  # one a (task, level): a proper subset
    main = {  # the first run's scores (seed 0 only): tables_main was read before seeds
        p.parent.name: json.loads(p.read_text())["final"]
        for p in results.glob("tiny_wan22/*/judge/*/score.json")
    }
    row = table[(table.model == "tiny_wan22") & (table.level == "avg")].iloc[0]
    assert row.final_half == pytest.approx(sum(main[i] for i in half) / 2)
    assert row.final_full == pytest.approx(sum(main.values()) / 3)
    assert row.difference == pytest.approx(row.final_half - row.final_full)
    assert bool(row.ranks_agree) and row.n_half == 2 and row.n_full == 3
