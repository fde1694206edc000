"""The generic family (`diffusers_i2v`): diffusers' own image-to-video pipelines from a registry
entry alone, on tiny random weights: checkpoints decoded as the pipeline decodes its video, a
job cut off resuming to the same bytes, and pipelines whose checkpoints would be wrong refused
by name before any job."""

from __future__ import annotations

import functools
import json
import shutil

import numpy as np
import pandas as pd
import pytest
import torch
import yaml

from tests.models.test_resumable import Job
from tests.support.fake_vlm import FakeVLM
from tests.support.pipelines import run_pipeline
from tests.support.scripted_judge import Judge, Transitioner
from tests.support.workflow import REPO, default_config, snakemake
from vgi_models.families import diffusers_i2v_tiny
from vgi_models.families.diffusers_i2v import DiffusersI2V
from vgi_models.families.wan_tiny import (
    _tiny_text_encoder,
    _tiny_tokenizer,
    _tiny_transformer,
    _tiny_vae,
)
from vgi_models.generate import generate
from vgi_models.registry import load_registry, weight_problems

TINY = ["tiny_skyreels_v2", "tiny_cogvideox", "tiny_hunyuan_skyreels"]
WORKFLOW = TINY[:2]  # through the workflow (a third adds ~10 CPU seconds)
STEPS = 4  # of each test run (the registry's 40 are the study's)
CHECKPOINTS = (1, 2, 4)


@pytest.fixture(scope="module", params=TINY)
def tiny(request, specs, example_image):
    """(spec at STEPS steps, pipe, recorder, latent output) of one recorded run per pipeline."""
    spec = specs[request.param].with_generation(num_inference_steps=STEPS)
    return spec, *run_pipeline(spec, example_image, CHECKPOINTS)


def test_checkpoints_at_the_chosen_steps_end_in_the_pipelines_own_video(tiny, example_image):
    """The last x0 is the final latent exactly, and decoded it is the video the pipeline
    itself makes (`output_type="np"`), frame for frame and bit for bit."""
    spec, pipe, rec, out = tiny
    family = spec.pipeline_family
    final = family.final_latents(pipe, out)
    assert sorted(rec.checkpoints) == list(CHECKPOINTS) and rec.calls == STEPS
    last = family.checkpoint_latents(pipe, rec.checkpoints[STEPS].x0, final)
    assert torch.equal(last, final)
    assert not torch.equal(family.checkpoint_latents(pipe, rec.checkpoints[2].x0, final), final)
    _, _, own = run_pipeline(spec, example_image, output_type="np", record=False)
    np.testing.assert_array_equal(family.decode(pipe, last), (own.frames[0] * 255).astype(np.uint8))


def test_generate_writes_the_checkpoints_and_the_video(tiny, example_image, tmp_path):
    spec = tiny[0]
    meta = generate(spec, str(example_image), "reach the exit", list(CHECKPOINTS), "x0", tmp_path)
    gen = spec.generation
    assert (meta["frames"], meta["height"], meta["width"]) == (
        gen["num_frames"], gen["height"], gen["width"],
    )  # fmt: skip
    assert meta["settings"]["pipeline"] == spec.pipeline
    written = sorted(p.name for p in (tmp_path / "denoise").iterdir())
    assert written == [f"step{s:02d}.mp4" for s in CHECKPOINTS]
    last = (tmp_path / "denoise" / f"step{STEPS:02d}.mp4").read_bytes()
    assert last == (tmp_path / "video.mp4").read_bytes()
    assert json.loads((tmp_path / "generation.json").read_text()) == meta


def test_a_killed_job_resumes_to_the_same_bytes(specs, tmp_path):
    """Cut off by SIGKILL after step 5 of 6 (saved at step 4), then run again."""
    jobs = {}
    for name in ("killed", "uncut"):
        job = Job(tmp_path / name, specs, "tiny_cogvideox", num_inference_steps=6)
        job.settings["denoise"]["steps"] = [2, 6]
        jobs[name] = job
    killed = jobs["killed"].cut_off((1, 5), save_every=2)
    assert killed.returncode == -9, killed.stderr[-3000:]
    assert "saved the state at step 4 of 6\n" in killed.stderr
    assert "resumed at step 4 of 6\n" in jobs["killed"].run(save_every=2)
    jobs["uncut"].run(save_every=2)
    assert jobs["killed"].outputs() == jobs["uncut"].outputs()
    assert jobs["killed"].meta()["resumed_from_step"] == 4


@pytest.fixture(scope="module")
def saved_cogvideox(specs, tmp_path_factory):
    """The tiny CogVideoX's weights in a folder, as the hub gives them."""
    folder = tmp_path_factory.mktemp("cogvideox")
    specs["tiny_cogvideox"].build().save_pretrained(folder)
    return folder


def test_weights_load_from_a_folder_naming_its_class(registry, saved_cogvideox, example_image):
    """Without `pipeline`, the folder's model_index.json names the class."""
    entry = registry["tiny_cogvideox"] | {"source": str(saved_cogvideox)}
    del entry["pipeline"]
    spec = load_registry({"saved": entry})["saved"]
    assert weight_problems(spec) == []
    pipe = spec.build()
    assert type(pipe).__name__ == "CogVideoXImageToVideoPipeline"
    assert pipe.transformer.config.sample_height == 8


def test_a_scheduler_whose_steps_cannot_be_read_is_refused_before_any_job(
    registry, saved_cogvideox, tmp_path
):
    """The same weights shipped with CogVideoX's DPM-Solver: refused by model, pipeline and
    scheduler, with the reason, from the folder's config alone."""
    from diffusers import CogVideoXDPMScheduler

    folder = tmp_path / "dpm"
    shutil.copytree(saved_cogvideox, folder)
    index = json.loads((folder / "model_index.json").read_text())
    index["scheduler"] = ["diffusers", "CogVideoXDPMScheduler"]
    (folder / "model_index.json").write_text(json.dumps(index))
    CogVideoXDPMScheduler().save_pretrained(folder / "scheduler")
    entry = registry["tiny_cogvideox"] | {"source": str(folder)}
    (problem,) = weight_problems(load_registry({"dpm": entry})["dpm"])
    assert problem.startswith(
        "model 'dpm': CogVideoXImageToVideoPipeline: scheduler CogVideoXDPMScheduler: takes the "
        "previous step's x0"
    )


def test_cogvideox_1_5_whose_latents_are_padded_is_refused(registry, saved_cogvideox, tmp_path):
    folder = tmp_path / "cogvideox15"
    shutil.copytree(saved_cogvideox, folder)
    config = json.loads((folder / "transformer" / "config.json").read_text())
    (folder / "transformer" / "config.json").write_text(json.dumps(config | {"patch_size_t": 2}))
    entry = registry["tiny_cogvideox"] | {"source": str(folder)}
    (problem,) = weight_problems(load_registry({"v15": entry})["v15"])
    assert "CogVideoX1.5 (transformer patch_size_t) pads the latent frames" in problem


@pytest.mark.parametrize(
    "pipeline, generation, reason",
    [
        ("Kandinsky5I2VPipeline", {}, "renormalises the first latent frames"),
        ("SanaImageToVideoPipeline", {}, "steps only the latent frames after the image's"),
        ("HunyuanVideoImageToVideoPipeline", {}, "drops the image's frame"),
        ("SkyReelsV2DiffusionForcingImageToVideoPipeline", {}, "(diffusion forcing)"),
        ("LTXConditionPipeline", {}, "drops the conditioning latents"),
        ("HunyuanVideoFramepackPipeline", {}, "joins the sections into its output"),
        ("HeliosPipeline", {}, "joins the sections into its output"),
        ("StableVideoDiffusionPipeline", {}, "its call takes no prompt"),
        ("CogVideoXImageToVideoPipeline", {"call_names": {"fps": "frame_rate"}},
         "generation.fps has no call keyword 'frame_rate'"),
    ],
)  # fmt: skip
def test_a_pipeline_that_cannot_serve_is_refused_by_name(
    registry, saved_cogvideox, pipeline, generation, reason
):
    entry = registry["tiny_cogvideox"] | {"source": str(saved_cogvideox), "pipeline": pipeline}
    entry["generation"] = entry["generation"] | generation
    problems = weight_problems(load_registry({"other": entry})["other"])
    assert any(p.startswith(f"model 'other': {pipeline}: ") and reason in p for p in problems)


def tiny_ti2v_5b():
    """Wan2.2-TI2V-5B's pipeline in small: one transformer on the latent alone, no image
    encoder; `expand_timesteps` puts the image's latent in the first latent frame."""
    from diffusers import UniPCMultistepScheduler, WanImageToVideoPipeline

    tokenizer = _tiny_tokenizer()
    return WanImageToVideoPipeline(
        tokenizer=tokenizer,
        text_encoder=_tiny_text_encoder(len(tokenizer)),
        vae=_tiny_vae(),
        scheduler=UniPCMultistepScheduler(
            prediction_type="flow_prediction", use_flow_sigmas=True, flow_shift=5.0
        ),
        transformer=_tiny_transformer(1, in_channels=16),
        expand_timesteps=True,
    )


def test_wan22_ti2v_5b_which_overwrites_its_first_frame_is_refused_before_any_job(
    specs, registry, example_image, tmp_path
):
    """After its loop the pipeline writes the image's latent over latent frame 0: the last x0
    is the video's latent everywhere but there. Refused by its pipeline config, from the
    folder before any job and on loading; the same folder without the setting is not."""
    pipe = tiny_ti2v_5b()
    spec = specs["tiny_skyreels_v2"].with_generation(num_inference_steps=STEPS)
    _, rec, out = run_pipeline(spec, example_image, [STEPS], pipe=pipe)
    last, final = rec.checkpoints[STEPS].x0, out.frames
    assert torch.equal(last[:, :, 1:], final[:, :, 1:])
    assert not torch.equal(last[:, :, :1], final[:, :, :1])

    pipe.save_pretrained(tmp_path)
    entry = registry["tiny_skyreels_v2"] | {
        "source": str(tmp_path), "pipeline": "WanImageToVideoPipeline"
    }  # fmt: skip
    (problem,) = weight_problems(load_registry({"ti2v": entry})["ti2v"])
    assert problem.startswith("model 'ti2v': WanImageToVideoPipeline: Wan2.2-TI2V-5B")
    assert "writes the image's latent over the first latent frame after its loop" in problem
    with pytest.raises(ValueError, match="expand_timesteps"):
        DiffusersI2V("WanImageToVideoPipeline").finish(pipe, spec.generation)
    index = json.loads((tmp_path / "model_index.json").read_text())
    (tmp_path / "model_index.json").write_text(json.dumps(index | {"expand_timesteps": False}))
    assert weight_problems(load_registry({"ti2v": entry})["ti2v"]) == []


def test_a_latent_output_of_another_shape_stops_the_job_before_any_file(
    specs, example_image, tmp_path, monkeypatch
):
    """A pipeline not known to return other latents than it steps (here SkyReels-V2 made to
    drop a latent frame after its loop, as LTX-Video's condition pipeline drops its
    conditioning ones) stops once denoised, before the video or any checkpoint is written."""
    from diffusers import SkyReelsV2ImageToVideoPipeline

    class Cropping(SkyReelsV2ImageToVideoPipeline):
        @functools.wraps(SkyReelsV2ImageToVideoPipeline.__call__)
        def __call__(self, *args, **kwargs):
            output = super().__call__(*args, **kwargs)
            output.frames = output.frames[:, :, 1:]
            return output

    def cropping() -> Cropping:
        return Cropping(**diffusers_i2v_tiny.skyreels_v2().components)

    monkeypatch.setitem(diffusers_i2v_tiny.BUILDERS, "SkyReelsV2ImageToVideoPipeline", cropping)
    spec = specs["tiny_skyreels_v2"].with_generation(num_inference_steps=2)
    with pytest.raises(ValueError, match=r"steps \(1, 16, 3, 8, 14\) but its latent output is"):
        generate(spec, str(example_image), "reach the exit", [1, 2], "x0", tmp_path / "run")
    assert not (tmp_path / "run").exists()


def test_generic_entries_run_through_the_workflow_judged_and_tabled(tmp_path, monkeypatch):
    """Two tiny pipelines as a user's registry entries, through `generate`, the judge (the
    scripted stub on FakeVLM) and the tables, as any model: checkpoints at the configured
    steps, the last the same bytes as the video, a score and a table row each."""
    monkeypatch.setenv("FAKE_VLM_KEY", "test-key")
    registry = yaml.safe_load((REPO / "config" / "models.yaml").read_text(encoding="utf-8"))
    for key in WORKFLOW:
        registry[key]["generation"]["num_inference_steps"] = STEPS
    (tmp_path / "models.yaml").write_text(yaml.safe_dump(registry), encoding="utf-8")
    config = default_config(tmp_path, tasks=["maze_square"], levels=[1])  # half: 1 instance
    config.update(models=WORKFLOW, model_registry=str(tmp_path / "models.yaml"))
    config["denoise"]["steps"] = list(CHECKPOINTS)
    with FakeVLM(Transitioner(other=Judge(tier=2, violations=[0]))) as fake:
        config["judge"] = {"enabled": True, "base_url": fake.url, "api_key_env": "FAKE_VLM_KEY"}
        result = snakemake(tmp_path, config, "tables")
    assert result.returncode == 0, result.stdout[-3000:]
    finals = pd.read_csv(tmp_path / "results" / "tables" / "final_by_domain_level.csv")
    overall = finals.query("domain == 'overall' and level == 'avg'").set_index("model")
    for key in WORKFLOW:
        (run,) = (tmp_path / "results" / key / "maze_square").glob("maze_square_lv1_*")
        written = sorted(p.name for p in (run / "denoise").glob("step*"))
        assert written == [f"step{s:02d}.mp4" for s in CHECKPOINTS]
        assert (run / "denoise" / f"step{STEPS:02d}.mp4").read_bytes() == (
            run / "video.mp4"
        ).read_bytes()
        score = json.loads((run.parent / "judge" / run.name / "score.json").read_text())
        assert score["status"] == "ok" and score["final"] is not None
        assert overall.loc[key, "n"] == 1
    assert "Judge: errors in 0 of 2 scores and 0 of 2 transition labels" in result.stdout
