"""The registry's one reading: the schema's defaults, the kinds, a job's resolved model."""

from __future__ import annotations

import copy
import json

import pytest
import yaml
from snakemake.utils import validate

from tests.support.workflow import REPO
from vgi_models.generate import generate
from vgi_models.registry import (
    API,
    IMAGES,
    PIPELINE,
    SCHEMA,
    STATIC,
    VIDEOS,
    load_registry,
    run_spec,
    with_defaults,
)


def test_defaults_are_those_snakemake_fills_in(registry):
    """The params of finished generate jobs were made from Snakemake's filling: the same."""
    filled = copy.deepcopy(registry)
    validate(filled, str(SCHEMA))
    assert with_defaults(registry) == filled
    assert with_defaults(registry)["tiny_wan22"]["runtime"]["offload"] == "none"


def test_one_kind_and_its_predicates(registry, specs):
    kinds = {spec.kind for spec in specs.values()}
    # VIDEOS, IMAGES: the paper's own generations of its video and image models
    assert kinds == {PIPELINE, API, VIDEOS, STATIC, IMAGES}
    for spec in specs.values():
        assert spec.denoises == (spec.kind == PIPELINE and spec.output == "video")
        assert spec.calls_api == (spec.kind == API)
        assert spec.generates == (spec.kind not in (VIDEOS, IMAGES))
        entry = registry[spec.key]
        image = entry.get("output") == "image" or entry["source"] == IMAGES
        assert (spec.output == "image") == image and not (image and spec.denoises)
        assert spec.tiny == spec.key.startswith("tiny")
    videos = with_defaults({"made": {"source": VIDEOS, "videos": "somewhere"}})
    spec = load_registry(videos)["made"]
    assert (spec.kind, spec.generates, spec.denoises, spec.calls_api) == (
        VIDEOS,
        False,
        False,
        False,
    )


def test_a_job_takes_the_video_from_its_params_and_how_it_runs_from_the_registry(
    registry, specs, tmp_path
):
    entry = registry["tiny_wan22"] | {"runtime": {"offload": "model"}}
    path = tmp_path / "models.yaml"
    path.write_text(yaml.safe_dump({"tiny_wan22": entry}))
    settings = copy.deepcopy(specs["tiny_wan22"].settings())
    settings["generation"]["seed"] = 7  # a seed's run
    settings["denoise"] = {"steps": [1, 2], "decode": "x0"}
    spec, denoise = run_spec(path, "tiny_wan22", json.dumps(settings))
    assert spec.generation["seed"] == 7 and denoise == {"steps": [1, 2], "decode": "x0"}
    assert spec.runtime == {
        "offload": "model",
        "vae_tiling": False,
        "attention_backend": "native",
        "compile": False,
    }


def test_no_steps_to_decode_is_refused_before_the_model_loads(specs, example_image, tmp_path):
    with pytest.raises(ValueError, match="denoise.steps is empty"):
        generate(specs["tiny_wan22"], str(example_image), "p", [], "x0", tmp_path)
    config = yaml.safe_load((REPO / "config/schemas/config.schema.yaml").read_text())
    assert config["properties"]["denoise"]["properties"]["steps"]["minItems"] == 1
