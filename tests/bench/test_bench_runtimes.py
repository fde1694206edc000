"""bench/runtimes.py: the registry's job time limits are those derived from the FLOPs."""

from __future__ import annotations

import importlib

import pytest

from tests.support.workflow import REPO


@pytest.fixture(scope="module")
def runtimes():
    with pytest.MonkeyPatch.context() as patch:
        patch.syspath_prepend(str(REPO / "bench"))
        yield importlib.import_module("runtimes")


def test_registry_runtime_is_the_derived_h20_limit(runtimes, registry):
    """Editing a model's steps, size or frames without updating its limit fails here."""
    table = runtimes.table()
    real = {  # an image pipeline's limit is set by hand (config/models.yaml), not derived here
        k
        for k, e in registry.items()
        if e["source"] not in ("tiny", "api", "videos", "static", "images")
        and e.get("output") != "image"
    }
    assert set(table) == real
    set_ = {k: registry[k]["resources"]["runtime"] for k in real}
    assert set_ == {k: row["H20"] for k, row in table.items()}


def test_limits_follow_the_flop_count(runtimes, specs):
    """More FLOPs, a slower GPU: never a shorter limit; the two-stage LTX costs its second stage."""
    wan = runtimes.video_flop(specs["wan22_i2v_a14b"])
    assert wan == pytest.approx(540e15, rel=0.05)  # NOTES: about 540 PFLOP at 720p, 81 frames
    hours = wan / (runtimes.UTILISATION * runtimes.GPUS["H20"]) / 3600
    assert runtimes.minutes(wan, "H20") >= 60 * hours * runtimes.MARGIN
    assert runtimes.minutes(wan, "H20") > runtimes.minutes(wan, "H100/H200")
    two, one = (runtimes.video_flop(specs[k]) for k in ("ltx23_i2v", "ltx23_i2v_one_stage"))
    stage_1 = specs["ltx23_i2v"]
    first = stage_1.steps * runtimes.LTX23(stage_1, "full").step_tflop() * 1e12
    assert first < two < one
