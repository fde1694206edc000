"""Every bench/ script runs at its smallest size (`--smoke`, as `python bench/<name>.py` runs
it, in the test process: tests/support/in_process.py): it exits 0, prints a report, then its
figures as one JSON object on the last line. No timing is asserted. The scripts are found by
glob, so a new one is covered without a line here."""

from __future__ import annotations

import importlib
import json
import runpy
from pathlib import Path

import pytest

from tests.support.in_process import run_main
from tests.support.workflow import REPO

BENCH = REPO / "bench"
SCRIPTS = sorted(path.stem for path in BENCH.glob("*.py"))
EXTRA = {  # arguments beside --smoke
    "gallery_load": ["--out", "{tmp}"],  # kept: the checks below read the fake study
    "gpu_generate": ["--json-out", "{tmp}/bench.json"],
    "run_all": ["--only", "judge_throughput"],  # its cheapest child; the others run below
}


@pytest.fixture(scope="module")
def bench():
    """Imports a bench script as a module, by name."""
    with pytest.MonkeyPatch.context() as patch:
        patch.syspath_prepend(str(BENCH))
        yield importlib.import_module


@pytest.mark.parametrize("name", SCRIPTS)
def test_smoke_run_prints_a_report_then_its_figures(name, tmp_path, bench):
    extra = [arg.format(tmp=tmp_path) for arg in EXTRA.get(name, [])]
    script = str(BENCH / f"{name}.py")
    result = run_main(
        lambda: runpy.run_path(script, run_name="__main__"), [script, "--smoke", *extra], tmp_path
    )
    assert result.returncode == 0, result.stderr[-3000:]
    *report, last = result.stdout.splitlines() or [""]
    figures = json.loads(last)
    assert isinstance(figures, dict) and figures, last
    assert any(line.strip() for line in report), result.stdout
    run_all = bench("run_all")
    if name in run_all.NAMES:
        assert run_all.headlines(name, figures)  # run_all's table reads these figures
    if name in CHECKS:
        CHECKS[name](figures, tmp_path, bench)


def check_gallery_load(figures: dict, folder: Path, bench) -> None:
    """The fake study's index opened in Chromium: every image counted, the filter works."""
    assert figures["instances"] == 15 and figures["models"] == 2
    results = folder / "results"
    refused = sum('"error"' in p.read_text() for p in results.glob("*/*/*/generation.json"))
    assert figures["thumbnail_files"] == 2 * (30 - refused)  # last frame + strip per video
    assert 0 < figures["dom_content_loaded_ms_median"] <= figures["load_ms_median"]
    assert figures["images"] == 15 + figures["thumbnail_files"]
    assert 0 < figures["images_loaded"] <= figures["images"]
    assert figures["shown"].endswith("of 15 instances shown")


def check_gpu_generate(figures: dict, folder: Path, bench) -> None:
    """The tiny run takes the full-size code path end to end on the CPU, the FLOP formula
    matches the Linears the hooks count, and each option's row holds its parts and both
    differences: the probe's (trajectory) agreeing with the option's class."""
    assert figures == json.loads((folder / "bench.json").read_text())
    assert figures["scale"] == "tiny"
    gpu_generate = bench("gpu_generate")
    assert list(figures["models"]) == list(gpu_generate.MODELS)
    for key, entry in figures["models"].items():
        plan, native = entry["plan"], entry["options"]["native"]
        assert plan["status"] == native["status"] == entry["load"]["status"] == "ok", key
        assert native["s_per_step"] > 0 and native["tflops"] > 0
        # hook-counted Linear FLOPs of each warm-up call == the per-stream formula
        assert native["linear_check"] == pytest.approx(dict.fromkeys(plan["calls"], 1.0))
        for option in ("native", "vae_tiling"):  # untiled; tiled in small tiles
            assert entry["vae"][option]["video_shape"] == plan["video"]
    rows = {(row["model"], row["option"]): row for row in figures["rows"]}
    assert set(rows) == {(m, o) for m in gpu_generate.MODELS for o in gpu_generate.SMOKE_OPTIONS}
    for row in rows.values():
        parts = [row[k] for k in ("load_s", "warmup_s", "denoise_s", "decode_s")]
        assert row["status"] == "ok" and row["video_s"] == pytest.approx(sum(parts))
        assert row["exact"] == (row["class"] == "exact"), row
        assert (row["call_rel"] == 0) == (row["option"] == "native")
    ltx = figures["models"]["ltx23_i2v"]["plan"]["calls"]
    assert [c["batch"] for c in ltx.values()] == [2, 1, 1]
    # STG skips self-attention in one block, isolation the audio<->video attention: both cost
    # less than half of the batched CFG call.
    cfg = ltx["cond+uncond"]["linear"] + ltx["cond+uncond"]["attention"]
    for name in ("stg", "isolation"):
        assert ltx[name]["linear"] + ltx[name]["attention"] < cfg / 2


def check_run_all(figures: dict, folder: Path, bench) -> None:
    """The child's figures reach the table, and it did not fail."""
    assert list(figures) == ["judge_throughput"]
    child = figures["judge_throughput"]
    assert "FAILED, exit code" not in child and child["wall s"] > 0


def check_plan_cost(figures: dict, folder: Path, bench) -> None:
    """The plan is config/paper.yaml's whole study at its prices: every video and image
    model (one task's 15 instances each), its GPU-hours priced (the judge's tokens on top)."""
    paper = bench("plan_cost").PAPER
    *rows, total = figures["plan"]
    assert [row["model"] for row in rows] == [*paper["models"], *paper["image_models"]]
    assert {row["videos_left"] for row in rows} == {15} and total["model"] == "total"
    assert figures["not_priced"] == []
    gpu = {row["model"]: row for row in rows if row["gpu_hours_left"]}
    assert {"wan22_i2v_a14b", "qwen_image_edit"} <= set(gpu)
    for row in gpu.values():
        assert row["cost_left"] > row["gpu_hours_left"] * paper["prices"]["gpu_hour"]["h100"]
    hours = figures["batching"]["gpu_hours_left"]  # the load once per 4 videos, not 4 times
    assert hours["4"] < hours["1"] < total["gpu_hours_left"]


CHECKS = {
    "gallery_load": check_gallery_load,
    "gpu_generate": check_gpu_generate,
    "plan_cost": check_plan_cost,
    "run_all": check_run_all,
}
