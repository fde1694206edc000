"""The exactness probe: one instance generated under two runtimes, the trajectories compared.

A run's trajectory is its final latents, its x0 estimate at each of `STEPS` and its decoded
video (`trajectory`). A runtime value is exact (`exact`) when, against the reference runtime's,
the largest relative RMS difference of the latents and checkpoints is within `TOLERANCE` and
no pixel of the video is off by more than one level: float32 rounding carried over 40 steps
gives 2e-7 to 6e-7 and single pixels rounded the other way; VAE tiling gives 5e-3 and more,
and pixels off by tens of levels.

On the tiny pipelines the VAEs' default tiles (256 px and up) cover a whole 64x112 frame, so
the probe shrinks them (`probe_tiles`) to cut it as a 720p frame is cut.
"""

from __future__ import annotations

import inspect
import math

import torch

from vgi_models.hooks import CheckpointRecorder
from vgi_models.input_image import load_rgb
from vgi_models.registry import ModelSpec
from vgi_models.runtime import place

STEPS = (1, 2, 5, 10, 20, 30, 40)
TOLERANCE = 1e-4
PROMPT = "move the green dot to the red dot"


def trajectory(
    spec: ModelSpec, runtime: dict, image: str, device: str = "cpu", steps=STEPS
) -> dict[str, torch.Tensor]:
    """The probe instance's trajectory under the entry's runtime with `runtime` on top:
    `latents` (the recorded stage's), `x0@<step>` for each of `steps`, `video` (uint8 frames
    of the final latents, a later stage's where the family has one)."""
    family, gen = spec.pipeline_family, spec.generation
    settings = spec.runtime | runtime
    pipe = place(spec.build(), settings, device, family.denoisers)
    if settings["vae_tiling"] and spec.tiny:
        pipe.vae.enable_tiling(**probe_tiles(pipe.vae))
    call = {
        "image": load_rgb(image),
        "prompt": PROMPT,
        "generator": torch.Generator("cpu").manual_seed(gen["seed"]),
    }
    with torch.inference_mode():
        with CheckpointRecorder(pipe.scheduler, tuple(steps), keep_xt=False) as rec:
            output = pipe(**call, output_type="latent", **family.call_kwargs(gen))
        recorded = family.final_latents(pipe, output).cpu()
        found = {"latents": recorded}
        for step in steps:
            x0 = family.checkpoint_latents(pipe, rec.checkpoints[step].x0, recorded)
            found[f"x0@{step}"] = x0.cpu()
        output = family.refine(pipe, output, gen, **call)
        found["video"] = torch.as_tensor(family.decode(pipe, family.final_latents(pipe, output)))
    return found


def difference(reference: dict[str, torch.Tensor], other: dict[str, torch.Tensor]) -> dict:
    """`trajectory`: the largest relative RMS difference over the latents and x0 checkpoints,
    and `where`; `video_levels`: the videos' largest difference in uint8 levels;
    `video_psnr_db` (inf: the same frames)."""
    relative = {
        name: rms(other[name].float() - ref.float()) / rms(ref.float())
        for name, ref in reference.items()
        if name != "video"
    }
    where = max(relative, key=relative.get)
    error = other["video"].float() - reference["video"].float()
    psnr = math.inf if rms(error) == 0 else 20 * math.log10(255 / rms(error))
    return {
        "trajectory": relative[where],
        "where": where,
        "video_levels": int(error.abs().max()),
        "video_psnr_db": psnr,
    }


def exact(found: dict) -> bool:
    """Whether a `difference` is rounding's: the trajectory within TOLERANCE, no pixel of the
    video off by more than one level (a value rounded the other way)."""
    return found["trajectory"] <= TOLERANCE and found["video_levels"] <= 1


def rms(tensor: torch.Tensor) -> float:
    return tensor.double().pow(2).mean().sqrt().item()


def probe_tiles(vae) -> dict:
    """`enable_tiling` sizes that cut a tiny frame into overlapping tiles: 48 px, 32 px apart
    (HunyuanVideo-1.5's: 4 latents, a quarter overlapping)."""
    takes = inspect.signature(vae.enable_tiling).parameters
    sizes = {"tile_sample_min_height": 48, "tile_sample_min_width": 48}
    if "tile_sample_stride_height" in takes:
        sizes |= {"tile_sample_stride_height": 32, "tile_sample_stride_width": 32}
    if "tile_latent_min_height" in takes:  # HunyuanVideo-1.5 (16x): 4 latents, 1 overlapping
        pixels = 4 * vae.spatial_compression_ratio
        sizes = {f"tile_sample_min_{side}": pixels for side in ("height", "width")}
        sizes |= {f"tile_latent_min_{side}": 4 for side in ("height", "width")}
    return sizes
