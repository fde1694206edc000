"""What a run checks and says before its first job: the VLM jobs' API keys, the weights of the
models about to generate, a narrower selection than its outdir holds. Real Snakemake runs on
the bundled example."""

from __future__ import annotations

import resource
import time

import pandas as pd
import pytest
import yaml

from tests.support.workflow import REPO, default_config, snakemake
from workflow_scripts.benchmark.coverage import narrower_run_note

VARIANT = {"backend": "openai", "model": "qwen", "base_url": "http://127.0.0.1:9/v1"}


def _child_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


@pytest.mark.parametrize(
    ("target", "variants", "expected"),
    [
        (
            "tables",
            None,
            "$GEMINI_API_KEY is not set: target tables needs it for 4 judge jobs, "
            "4 label_transitions jobs (API calls).",
        ),
        (
            "judges_all",
            {"qwen": {**VARIANT, "api_key_env": "VGI_TEST_VARIANT_KEY"}},
            "$VGI_TEST_VARIANT_KEY is not set: target judges_all needs it for "
            "4 judge_variant jobs (API calls).",
        ),
    ],
)
def test_a_target_needing_the_vlm_without_its_key_stops_before_any_job(
    tmp_path, monkeypatch, target, variants, expected
):
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    monkeypatch.delenv("VGI_TEST_VARIANT_KEY", raising=False)
    config = default_config(tmp_path)
    if variants:
        config["judges"] = variants
    wall, cpu = time.perf_counter(), _child_cpu()
    result = snakemake(tmp_path, config, target)
    wall, cpu = time.perf_counter() - wall, _child_cpu() - cpu
    print(f"snakemake --cores 2 {target} without the key: {wall:.2f} s wall, {cpu:.2f} CPU s")
    assert result.returncode == 1, result.stdout[-3000:]
    assert expected in result.stdout and "Nothing was run." in result.stdout
    assert "ask for targets without the judge" in result.stdout
    assert "video API models" not in result.stdout  # no video API job lacks a key
    assert "Select jobs to execute" not in result.stdout  # the scheduler never started
    assert not (tmp_path / "results").exists()  # no video, no frames/, no log
    assert wall < 30  # about 2 s on an idle machine (the check itself is after the DAG)


def test_an_image_api_model_without_its_key_stops_before_any_job(tmp_path, monkeypatch):
    """The image branch's API jobs need their model's key: named, with the way around it
    that fits them (not the judge's)."""
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    config = default_config(tmp_path) | {"image_models": ["nano_banana_pro"]}
    config["judge"] = {"enabled": False}
    result = snakemake(tmp_path, config, "image_all")
    assert result.returncode == 1, result.stdout[-3000:]
    needs = "$GEMINI_API_KEY is not set: target image_all needs it for 9 generate_image_api jobs"
    assert needs in result.stdout and "Nothing was run." in result.stdout
    assert "leave the image API models out of `image_models:`" in result.stdout
    assert "targets without the judge" not in result.stdout and "video API" not in result.stdout
    assert not (tmp_path / "results").exists()


def test_a_target_without_vlm_jobs_runs_without_the_key(tmp_path, monkeypatch):
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    result = snakemake(tmp_path, default_config(tmp_path), "select_instances")
    assert result.returncode == 0, result.stdout[-3000:]
    assert (tmp_path / "results" / "instances" / "selected.csv").is_file()


def test_weights_are_checked_for_the_models_about_to_generate_and_a_plan_needs_none(tmp_path):
    """Real weights not downloaded yet: the plan prices the study, a run of their generate
    jobs stops before any job naming each model and what it lacks."""
    registry = yaml.safe_load((REPO / "config" / "models.yaml").read_text(encoding="utf-8"))
    missing = tmp_path / "not downloaded"
    registry["wan22_i2v_a14b"]["source"] = str(missing)
    (tmp_path / "models.yaml").write_text(yaml.safe_dump(registry), encoding="utf-8")
    config = default_config(tmp_path, tasks=["maze_square"], levels=[1])
    config |= {"model_registry": str(tmp_path / "models.yaml")}
    config["models"] = ["tiny_wan22", "wan22_i2v_a14b", "vbvr_wan22"]
    plan = snakemake(tmp_path, config, "plan")
    assert plan.returncode == 0, plan.stdout[-3000:]
    run = snakemake(tmp_path, config, "generate_all")
    assert run.returncode != 0 and "Nothing was run:" in run.stdout
    assert f"model 'wan22_i2v_a14b': weights {missing} not found" in run.stdout
    assert "model 'vbvr_wan22': LoRA weights Video-Reason/VBVR-Wan2.2-diffsynth" in run.stdout
    assert "tiny_wan22'" not in run.stdout.split("Nothing was run:")[1]
    assert not (tmp_path / "results" / "tiny_wan22").exists()  # no job ran, not even tiny's
    only_tiny = snakemake(tmp_path, config, "-n", str(tmp_path / "results" / "tiny_wan22"))
    assert "Nothing was run" not in only_tiny.stdout


def test_a_run_narrower_than_its_outdir_says_so_first(tmp_path):
    config = default_config(tmp_path)
    assert snakemake(tmp_path, config, "select_instances").returncode == 0  # 12 instances
    (tmp_path / "results" / "tiny_wan21").mkdir()  # a model the outdir holds
    results = tmp_path / "results"

    # onstart (a run, not a dry run, which reads nothing of the outdir): before any job
    subset = {**config, "benchmark": {**config["benchmark"], "tasks": ["maze_square"]}}
    lines = snakemake(tmp_path, subset, "select_instances").stdout.splitlines()
    first = lines.index(f"This run covers less than {results}/ already holds:")
    assert first < lines.index("Select jobs to execute...")
    note = "\n".join(lines[first : first + 5])
    assert "holds 12 instances of 4 tasks (block_assembly, clock_running, maze_square" in note
    assert "and 1 model (tiny_wan21);" in note
    assert "this run selects 3 instances of 1 task (maze_square) and 1 model (tiny_wan22)" in note
    assert "leaving out 9 instances and 1 model tiny_wan21" in note
    assert f"--config outdir={results}_subset" in note

    # A wider selection than the outdir's (3 instances now), or a subset in its own outdir:
    # the run starts (select_instances reruns) with nothing to say.
    (tmp_path / "results" / "tiny_wan21").rmdir()
    own = {**subset, "outdir": f"{results}_subset"}
    for run in (config, own):
        output = snakemake(tmp_path, run, "select_instances").stdout
        assert "Select jobs to execute" in output and "covers less" not in output


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("", "is empty"),
        ('instance,task\n"a,b\n', "is not a readable table"),
        ("id,level\nx,1\n", "has the columns id, level, without instance, task"),
    ],
)
def test_an_unreadable_selection_is_named_with_its_fix(tmp_path, text, reason):
    selected = tmp_path / "instances" / "selected.csv"
    selected.parent.mkdir()
    selected.write_text(text)
    instances = pd.DataFrame({"task": ["maze_square"]}, index=["maze_square_lv1_001"])
    note = narrower_run_note(tmp_path, instances, ["tiny_wan22"], ["tiny_wan22"])
    assert note.startswith(f"{selected} {reason}")
    assert "delete it, or add --forcerun select_instances" in note
