"""bench/gpu_generate.py: the full-size shapes, token counts and parameter counts are derived
without allocating (its tiny run on the CPU is checked in test_bench_smoke.py)."""

from __future__ import annotations

import importlib.util
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
    yield module
    sys.modules.pop(spec.name, None)


def test_full_size_shapes_tokens_and_flops(bench):
    wan, hunyuan, ltx = (
        bench.plan(key, "full").summary()
        for key in ("wan22_i2v_a14b", "hunyuan15_i2v", "ltx23_i2v")
    )
    assert wan["latent"] == [16, 21, 90, 160] and wan["tokens"]["video"] == 75_600
    assert hunyuan["latent"] == [32, 31, 45, 80] and hunyuan["tokens"]["video"] == 111_600
    assert hunyuan["tokens"]["text"] == 1000 + 256 + 729
    # the recorded first stage of LTX-2.3's two-stage recipe, at 16:9: 352x640
    assert ltx["latent"] == [128, 16, 11, 20] and ltx["tokens"]["video"] == 16 * 11 * 20
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
