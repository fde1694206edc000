"""Runtime settings: attention backend, VAE tiling, placement (CPU here; offload needs a GPU),
and their classes: each measured by the exactness probe on the tiny Wan2.2, and an approximate
value part of what decides the video (params, generation.json, the resume key)."""

from __future__ import annotations

import copy
import json

import pytest
import torch
import yaml

from tests.support.pipelines import run_pipeline
from vgi_models import exactness
from vgi_models.registry import SCHEMA, run_spec
from vgi_models.runtime import APPROXIMATE, CLASSES, EXACT, option_class, place


def placed(spec, **runtime):
    """The spec's tiny pipeline placed on the CPU with its runtime settings, `runtime` on top."""
    return place(spec.build(), spec.runtime | runtime, "cpu", spec.pipeline_family.denoisers)


def latents(pipe, spec, image):
    return run_pipeline(spec, image, pipe=pipe, record=False, num_inference_steps=4)[2].frames


def test_attention_backend_reaches_both_experts_and_keeps_the_result(specs, example_image):
    spec = specs["tiny_wan22"]
    native = latents(placed(spec), spec, example_image)
    pipe = placed(spec, attention_backend="_native_math")
    for expert in (pipe.transformer, pipe.transformer_2):
        backends = {
            m.processor._attention_backend
            for m in expert.modules()
            if hasattr(getattr(m, "processor", None), "_attention_backend")
        }
        assert backends == {"_native_math"}  # a str enum: equal to its value
    torch.testing.assert_close(latents(pipe, spec, example_image), native, atol=1e-5, rtol=1e-5)
    # diffusers keeps the backend last set as the process's default: a native pipeline
    # placed after it names its own
    again = placed(spec).transformer
    assert {m.processor._attention_backend for m in again.modules() if hasattr(m, "processor")} == {
        "native"
    }


def test_vae_tiling_and_unknown_backend(specs):
    spec = specs["tiny_wan22"]
    assert placed(spec, vae_tiling=True).vae.use_tiling
    assert not placed(spec).vae.use_tiling
    with pytest.raises(ValueError):
        placed(spec, attention_backend="no_such_backend")


@pytest.fixture(scope="module")
def reference(specs, example_image):
    """The tiny Wan2.2's probe trajectory under its own runtime (native, untiled)."""
    return exactness.trajectory(specs["tiny_wan22"], {}, str(example_image))


@pytest.mark.parametrize(
    ("setting", "value"), [("attention_backend", "_native_math"), ("vae_tiling", True)]
)
def test_a_value_is_classed_as_the_probe_measures_it(
    setting, value, specs, example_image, reference
):
    """The measured check: the probe instance made both ways; another exact attention kernel
    stays within rounding, tiling moves the latents (the image is encoded in tiles) and the
    video's pixels."""
    found = exactness.difference(
        reference, exactness.trajectory(specs["tiny_wan22"], {setting: value}, str(example_image))
    )
    measured = EXACT if exactness.exact(found) else APPROXIMATE
    assert measured == option_class(setting, value)
    if measured == EXACT:
        assert 0 < found["trajectory"] < 1e-5 and found["video_levels"] <= 1
    else:
        assert found["trajectory"] > 10 * exactness.TOLERANCE and found["video_levels"] > 10


def test_every_runtime_setting_is_classed():
    schema = yaml.safe_load(SCHEMA.read_text(encoding="utf-8"))
    assert set(schema["$defs"]["model"]["properties"]["runtime"]["properties"]) == set(CLASSES)
    assert option_class("attention_backend", "sage") == APPROXIMATE
    assert option_class("attention_backend", "flash") == EXACT
    assert option_class("compile", True) == option_class("offload", "sequential") == EXACT


def test_an_approximate_value_decides_the_video_and_a_job_refuses_another(
    registry, specs, tmp_path
):
    """Tiling joins the settings (the job's params, generation.json, the resume key); an exact
    value does not. A job whose registry has since changed an approximate value stops before
    loading anything, naming the model and both."""
    plain = specs["tiny_wan22"].settings()
    tiled = copy.deepcopy(plain) | {"runtime": {"vae_tiling": True}}
    assert "runtime" not in plain
    path = tmp_path / "models.yaml"

    def job(runtime: dict, scheduled: dict):
        path.write_text(yaml.safe_dump({"tiny_wan22": registry["tiny_wan22"] | runtime}))
        return run_spec(path, "tiny_wan22", json.dumps(scheduled))[0]

    exact = job({"runtime": {"offload": "model", "compile": True}}, plain)
    assert exact.settings() == plain and exact.runtime["compile"]
    assert job({"runtime": {"vae_tiling": True}}, tiled).settings() == tiled
    with pytest.raises(ValueError, match=r"'tiny_wan22'.+\{'vae_tiling': True\}.+with \{\}"):
        job({"runtime": {"vae_tiling": True}}, plain)
    with pytest.raises(ValueError, match=r"now has approximate settings \{\}.+with \{'vae"):
        job({}, tiled)
