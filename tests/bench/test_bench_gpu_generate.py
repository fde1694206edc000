"""bench/gpu_generate.py: the tiny run takes the full-size code path end to end on the CPU, and
the full-size shapes, token counts and parameter counts are derived without allocating."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "gpu_generate.py"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("gpu_generate", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve annotations through sys.modules
    spec.loader.exec_module(module)
    threads = module.torch.get_num_threads()  # the tiny run sets 1
    yield module
    module.torch.set_num_threads(threads)
    sys.modules.pop(spec.name, None)


def test_tiny_run_measures_every_model_and_the_flop_formula_matches_the_linears(
    bench, capsys, tmp_path
):
    out = tmp_path / "bench.json"
    summary = bench.main(["--scale", "tiny", "--steps", "1", "--json-out", str(out)])
    printed = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert printed == json.loads(out.read_text()) == json.loads(json.dumps(summary))
    assert list(summary["models"]) == list(bench.MODELS)
    for key, entry in summary["models"].items():
        plan, denoiser, vae = entry["plan"], entry["denoiser"], entry["vae"]
        assert plan["status"] == denoiser["status"] == vae["status"] == "ok", (key, entry)
        assert denoiser["s_per_step"] > 0 and denoiser["tflops"] > 0
        # hook-counted Linear FLOPs of each warm-up call == the per-stream formula
        assert denoiser["linear_check"] == pytest.approx(dict.fromkeys(plan["calls"], 1.0))
        assert vae["video_shape"] == plan["video"]  # tiled decode, small tiles
    ltx = summary["models"]["ltx23_i2v"]["plan"]["calls"]
    assert [c["batch"] for c in ltx.values()] == [2, 1, 1]
    # STG skips self-attention in one block, isolation the audio<->video attention: both cost
    # less than half of the batched CFG call.
    cfg = ltx["cond+uncond"]["linear"] + ltx["cond+uncond"]["attention"]
    for name in ("stg", "isolation"):
        assert ltx[name]["linear"] + ltx[name]["attention"] < cfg / 2


def test_full_size_shapes_tokens_and_flops(bench):
    wan, hunyuan, ltx = (
        bench.plan(key, "full").summary()
        for key in ("wan22_i2v_a14b", "hunyuan15_i2v", "ltx23_i2v")
    )
    assert wan["latent"] == [16, 21, 90, 160] and wan["tokens"]["video"] == 75_600
    assert hunyuan["latent"] == [32, 31, 45, 80] and hunyuan["tokens"]["video"] == 111_600
    assert hunyuan["tokens"]["text"] == 1000 + 256 + 729
    # the recorded first stage of LTX-2.3's two-stage recipe: 512x768
    assert ltx["latent"] == [128, 16, 16, 24] and ltx["tokens"]["video"] == 6_144
    assert ltx["tokens"]["audio"] == 126
    assert wan["params_b"] == pytest.approx(14.29, abs=0.01)
    assert hunyuan["params_b"] == pytest.approx(8.33, abs=0.01)
    assert ltx["params_b"] == pytest.approx(18.99, abs=0.01)
    # Wan: 2 * 11.95 B video-stream weights * 75,600 tokens, + 4 N^2 D over 40 blocks
    flops = wan["calls"]["cond+uncond"]
    assert flops["linear"] == pytest.approx(1810, rel=0.01)
    assert flops["attention"] == pytest.approx(4 * 75_600**2 * 5120 * 40 / 1e12, rel=0.01)
    # the original author's full-size plan: TFLOP per step
    ltx_one_stage = bench.plan("ltx23_i2v_one_stage", "full").summary()  # 704x1280
    for plan, tflop in ((ltx_one_stage, 2097), (wan, 13050), (hunyuan, 12650)):
        assert plan["tflop_per_step"] == pytest.approx(tflop, rel=0.005)
