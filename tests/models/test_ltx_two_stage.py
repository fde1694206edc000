"""LTX-2.3's two-stage recipe on the tiny model: checkpoints over the first stage, the video from
the second (x2 latent upsample, then a short refinement)."""

from __future__ import annotations

import copy
import json

import decord
import pytest
import torch
from snakemake.utils import validate

from tests.support.pipelines import run_pipeline
from tests.support.workflow import REPO, default_config, snakemake
from vgi_models.registry import load_registry, weight_problems

STEPS = [1, 2, 3, 4, 10, 20, 40]
MODELS = ("tiny_ltx23_two_stage", "tiny_ltx23")


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Both tiny LTX models through the `generate` rule on one instance: {model: run folder}."""
    workdir = tmp_path_factory.mktemp("two_stage")
    config = default_config(workdir, tasks=["maze_square"], levels=[1])
    config["models"] = list(MODELS)
    result = snakemake(workdir, config, "generate_all")
    assert result.returncode == 0, result.stdout[-3000:]
    return {m: next((workdir / "results" / m / "maze_square").iterdir()) for m in MODELS}


def _size(path) -> tuple[int, int, int]:
    video = decord.VideoReader(str(path))
    return (len(video), *video[0].shape[:2])


def test_two_stage_video_is_the_upsampled_second_stage(runs, specs):
    run = runs["tiny_ltx23_two_stage"]
    gen = specs["tiny_ltx23_two_stage"].generation
    first = (gen["num_frames"], gen["height"], gen["width"])
    assert _size(run / "video.mp4") == (first[0], 2 * first[1], 2 * first[2])
    for step in STEPS:
        assert _size(run / "denoise" / f"step{step:02d}.mp4") == first
    meta = json.loads((run / "generation.json").read_text())
    assert (meta["height"], meta["width"]) == (64, 128)
    assert meta["checkpoint_size"] == {"height": 32, "width": 64}
    assert meta["settings"]["generation"]["stage_2"] == gen["stage_2"]


def test_first_stage_is_the_one_stage_model(runs):
    """Same settings but `stage_2`: the last checkpoint of the two-stage run is, byte for byte,
    the one-stage model's video; the two-stage video is not a plain copy of it."""
    two, one = runs["tiny_ltx23_two_stage"], runs["tiny_ltx23"]
    assert (two / "denoise" / "step40.mp4").read_bytes() == (one / "video.mp4").read_bytes()
    assert (two / "denoise" / "step40.mp4").read_bytes() != (two / "video.mp4").read_bytes()


def test_second_stage_denoises_along_the_configured_sigmas(specs, example_image):
    """The refinement's transformer calls see exactly sigmas x 1000 (no dynamic shift), and the
    first stage's scheduler is back on the pipeline afterwards."""
    spec = specs["tiny_ltx23_two_stage"]
    pipe, _, out = run_pipeline(spec, example_image, record=False)
    seen = []
    pipe.transformer.register_forward_pre_hook(
        lambda _, args, kwargs: seen.append(float(kwargs["timestep"].flatten()[-1])),
        with_kwargs=True,
    )
    scheduler = pipe.scheduler
    generator = torch.Generator().manual_seed(0)
    with torch.inference_mode():
        refined = spec.pipeline_family.refine(
            pipe, out, spec.generation, image=example_image, prompt="go", generator=generator
        )
    sigmas = spec.generation["stage_2"]["sigmas"]
    assert sorted(set(seen), reverse=True) == pytest.approx([1000 * s for s in sigmas])
    assert pipe.scheduler is scheduler and scheduler.config.use_dynamic_shifting
    assert refined.frames.shape[-2:] == tuple(2 * n for n in out.frames.shape[-2:])


def test_real_loader_reads_the_upsampler_beside_the_weights(specs, registry, tmp_path):
    """Without the upsampler folder the model is reported when its jobs are about to run;
    with it, it loads."""
    spec = specs["tiny_ltx23_two_stage"]
    pipe = spec.build()
    pipe.save_pretrained(tmp_path)
    saved = load_registry({"saved": registry[spec.key] | {"source": str(tmp_path)}})
    (problem,) = weight_problems(saved["saved"])
    assert problem.startswith("model 'saved': latent upsampler latent_upsampler/ not in")
    pipe.latent_upsampler.save_pretrained(tmp_path / spec.generation["stage_2"]["upsampler"])
    assert weight_problems(saved["saved"]) == []
    loaded = saved["saved"]
    mine, theirs = (p.latent_upsampler.state_dict() for p in (pipe, loaded.build()))
    assert mine.keys() == theirs.keys() and all(torch.equal(mine[k], theirs[k]) for k in mine)


def test_schema_allows_stage_2_only_for_ltx(registry):
    schema = str(REPO / "config" / "schemas" / "models.schema.yaml")
    validate(copy.deepcopy({"m": registry["ltx23_i2v"]}), schema)
    wan = copy.deepcopy(registry["wan22_i2v_a14b"])
    wan["generation"]["stage_2"] = registry["ltx23_i2v"]["generation"]["stage_2"]
    with pytest.raises(Exception, match="stage_2|not valid"):
        validate({"m": wan}, schema)
