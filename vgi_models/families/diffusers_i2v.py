"""Any diffusers image-to-video pipeline from a registry entry alone (`family: diffusers_i2v`).

The entry names its weights (`source`) and, where the folder's `model_index.json` does not,
its class (`pipeline`); the generation settings are data, passed to the pipeline's call
under its own keyword names (`generation.call_names` maps ours to them where they differ).
The scheduler, its settings included, is the one the weights ship with.

A pipeline is refused, by name and with the reason, before any job (`problems`) when its
checkpoints could not be what it would itself decode: a call without the step callback or
`prepare_latents` (resuming needs both), a scheduler whose clean estimate is not known
(`vgi_models.hooks.clean_estimator`), a keyword the call does not take, or a pipeline whose
latent output is not what its scheduler steps or its video is made of, or is changed after
its loop (`REFUSED`; `REFUSED_SETTINGS` by a setting of its own config or its transformer's).
"""

from __future__ import annotations

import copy
import inspect
import json
from pathlib import Path

from vgi_models.families.base import Family

# our generation setting -> the call keyword it is passed as, unless `call_names` says otherwise
CALL_SETTINGS = ("height", "width", "num_frames", "num_inference_steps", "guidance_scale",
                 "negative_prompt", "max_sequence_length")  # fmt: skip
NEEDED = ("image", "prompt", "generator", "output_type", "callback_on_step_end")
REFUSED = {
    "Kandinsky5I2VPipeline": "after its loop it renormalises the first latent frames against "
    "later ones using the image latent its output drops (normalize_first_frame), so a checkpoint "
    "cannot be put in the form its decode takes",
    "LTXImageToVideoPipeline": "its scheduler steps the unpacked frames after the image's while "
    "its latent output is packed, and its VAE decode adds seeded noise (decode_timestep)",
    "LTXConditionPipeline": "after its loop it drops the conditioning latents its scheduler "
    "stepped with the video's and unpacks the rest, so no step's state is its latent output",
    "LTX2ImageToVideoPipeline": "its latents are packed and it denoises video and audio together: "
    "LTX-2 runs through its own family (`family: ltx23`)",
    "HunyuanVideoImageToVideoPipeline": "its scheduler steps only the frames after the image's "
    "(token_replace), or its latent output drops the image's frame its scheduler steps "
    "(latent_concat)",
    "SanaImageToVideoPipeline": "its scheduler steps only the latent frames after the image's, "
    "which it puts back in front of them",
    "Kandinsky6TI2VAPipeline": "its scheduler steps the video's latents with the image's appended "
    "as one more frame, which its output drops",
    "SkyReelsV2DiffusionForcingImageToVideoPipeline": "it steps each latent frame with its own "
    "copy of the scheduler at its own timestep (diffusion forcing), so no step is the video's",
    **dict.fromkeys(
        ("HunyuanVideoFramepackPipeline", "HeliosPipeline", "HeliosPyramidPipeline"),
        "it denoises the video in sections, each a loop of its own, and after them joins the "
        "sections into its output, so no step's state is the video's",
    ),
}
# pipeline -> (the config, `pipeline` or `transformer`, and its setting; why a model that sets
# it is refused)
REFUSED_SETTINGS = {
    "CogVideoXImageToVideoPipeline": (
        ("transformer", "patch_size_t"),
        "CogVideoX1.5 (transformer patch_size_t) pads the latent frames and drops the padding "
        "only in its decode, so its latent output is not the frames of its video",
    ),
    "WanImageToVideoPipeline": (
        ("pipeline", "expand_timesteps"),
        "Wan2.2-TI2V-5B (expand_timesteps) writes the image's latent over the first latent "
        "frame after its loop, so every checkpoint's first frame would be an x0 its video never "
        "used",
    ),
}


class DiffusersI2V(Family):
    """The generic family; `pipeline` is the entry's class name (None: `model_index.json`'s)."""

    name = "diffusers_i2v"

    def __init__(self, pipeline: str | None = None) -> None:
        self.pipeline = pipeline

    def named(self, pipeline: str | None) -> DiffusersI2V:
        """The family for one entry's pipeline class."""
        family = copy.copy(self)
        family.pipeline = pipeline
        return family

    def load(self, source: str, generation: dict, dtype):
        import diffusers

        kind = getattr(diffusers, self.pipeline) if self.pipeline else diffusers.DiffusionPipeline
        pipe = kind.from_pretrained(source, dtype=dtype, local_files_only=True)
        return self.finish(pipe, generation)

    def finish(self, pipe, generation: dict):
        """Refuses (ValueError, every reason) a pipeline whose checkpoints would be wrong."""
        problems = refusals(type(pipe), pipe.scheduler, _configs(pipe), generation)
        if problems:
            raise ValueError("; ".join(problems))
        return pipe

    def problems(self, source: str, generation: dict) -> list[str]:
        """Why the entry cannot run, from its pipeline class and scheduler alone (no weights
        loaded): the tiny pipeline is built; a folder's `model_index.json` and scheduler
        config are read."""
        import diffusers

        if source == "tiny":
            from vgi_models.families.diffusers_i2v_tiny import BUILDERS

            if self.pipeline not in BUILDERS:
                return [f"no tiny {self.pipeline} (tiny pipelines: {', '.join(BUILDERS)})"]
            pipe = BUILDERS[self.pipeline]()
            return refusals(type(pipe), pipe.scheduler, _configs(pipe), generation)
        index = json.loads((Path(source) / "model_index.json").read_text(encoding="utf-8"))
        name = self.pipeline or index["_class_name"]
        kind = getattr(diffusers, name, None)
        if not (isinstance(kind, type) and issubclass(kind, diffusers.DiffusionPipeline)):
            return [f"diffusers has no pipeline {name}"]
        scheduler = getattr(diffusers, index["scheduler"][1])
        scheduler = scheduler.from_pretrained(source, subfolder="scheduler", local_files_only=True)
        transformer = Path(source) / "transformer" / "config.json"
        configs = {
            "pipeline": index,
            "transformer": (
                json.loads(transformer.read_text(encoding="utf-8")) if transformer.is_file() else {}
            ),
        }
        return refusals(kind, scheduler, configs, generation)

    def call_kwargs(self, generation: dict) -> dict:
        """The settings under the call's keyword names; `fps` only where `call_names` maps it."""
        names = generation.get("call_names", {})
        return {
            names.get(key, key): generation[key]
            for key in (*CALL_SETTINGS, "fps")
            if key in generation and (key != "fps" or key in names)
        }

    def checkpoint_latents(self, pipe, state, final):
        """The scheduler's state is the latent output itself (`REFUSED` holds the exceptions
        known; a shape that differs is one more, refused before anything is written)."""
        if state.shape != final.shape:
            raise ValueError(
                f"{type(pipe).__name__}: its scheduler steps {tuple(state.shape)} but its latent "
                f"output is {tuple(final.shape)}; its checkpoints cannot be decoded as its video"
            )
        return state


def refusals(kind: type, scheduler, configs: dict[str, dict], generation: dict) -> list[str]:
    """Every reason pipeline class `kind` with `scheduler` and `configs` (the pipeline's own,
    as in `model_index.json`, and its transformer's) cannot run `generation` here."""
    from vgi_models.hooks import UnsupportedScheduler, clean_estimator

    name = kind.__name__
    if name in REFUSED:
        return [f"{name}: {REFUSED[name]}"]
    if name in REFUSED_SETTINGS:
        (config, setting), why = REFUSED_SETTINGS[name]
        if configs[config].get(setting):
            return [f"{name}: {why}"]
    found = []
    takes = inspect.signature(kind.__call__).parameters
    missing = [p for p in NEEDED if p not in takes]
    if missing:
        found.append(f"{name}: its call takes no {', '.join(missing)}")
    if not hasattr(kind, "prepare_latents"):
        found.append(f"{name}: no prepare_latents, so a job cut off cannot resume")
    names = generation.get("call_names", {})
    for key in (*CALL_SETTINGS, *names):
        keyword = names.get(key, key)
        if key in generation and keyword not in takes:
            found.append(f"{name}: generation.{key} has no call keyword {keyword!r}")
    try:
        clean_estimator(scheduler)
    except UnsupportedScheduler as err:
        found.append(f"{name}: {err}")
    return found


def _configs(pipe) -> dict[str, dict]:
    """The pipeline's config and its transformer's ({} for one that denoises with a UNet)."""
    transformer = getattr(pipe, "transformer", None)
    return {
        "pipeline": dict(pipe.config),
        "transformer": dict(transformer.config) if transformer is not None else {},
    }
