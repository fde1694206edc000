"""One generation job: a video, its denoising checkpoints and `generation.json`."""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import platform
import resource
import time
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path
from typing import NamedTuple

import torch

from vgi_models.hooks import CheckpointRecorder
from vgi_models.input_image import load_rgb
from vgi_models.registry import ModelSpec
from vgi_models.resume import Trajectory, keep, restore
from vgi_models.runtime import place
from vgi_models.state import state_key, write_atomic
from vgi_models.video import checkpoint_name, write_video

PACKAGES = ("torch", "diffusers", "transformers", "accelerate", "peft")
SAVE_EVERY = 5  # denoise.save_every's default (README, "Preemptible partitions")
KINDS = {"x0": ["x0"], "xt": ["xt"], "both": ["x0", "xt"]}
OUTPUTS = ["video.mp4", "denoise", "generation.json"]  # what a job writes in its folder
log = logging.getLogger(__name__)


class Loaded(NamedTuple):
    """A pipeline ready to run: its LoRA (as `generation.json` records it), load seconds."""

    pipe: object
    lora: object
    seconds: float


@dataclass(frozen=True)
class Instance:
    """One video of a generate job: its input image and prompt, where its outputs go
    (`out_dir`) and where its resumable state lives (`state_dir`; None: not resumable)."""

    image: str
    prompt: str
    out_dir: Path
    state_dir: Path | None = None


def generate(
    spec: ModelSpec,
    image: str,
    prompt: str,
    steps: list[int],
    decode: str,
    out_dir: Path,
    state_dir: Path | None = None,
    save_every: int = SAVE_EVERY,
) -> dict:
    """Run the model on one instance, decode every checkpoint, return the metadata written.

    The pipeline family (`vgi_models.families`) maps the pipeline's latent output
    (`final_latents`) and a recorded state (`checkpoint_latents`) to the same latent form,
    which its `decode` turns into frames; every checkpoint is mapped (the family's checks) as
    soon as the recorded stage ends, before anything is written.
    Checkpoints are recorded over the first (or only) stage; `refine` runs any later stage, whose
    output is the video (LTX-2.3's two-stage recipe: checkpoints at the first stage's size).

    With `state_dir` the job is resumable (`vgi_models.resume`): the denoising state is saved
    there every `save_every` steps and on SIGTERM, until the outputs are written; a state an
    earlier attempt saved for the same settings, prompt, image and versions is resumed.
    """
    if not steps:
        raise ValueError("denoise.steps is empty: name at least one step to decode")
    device = job_device()
    loaded = load(spec, device)
    one = Instance(image, prompt, Path(out_dir), state_dir)
    return make(spec, loaded, device, one, steps, decode, save_every)


def generate_batch(
    spec: ModelSpec,
    instances: list[Instance],
    steps: list[int],
    decode: str,
    save_every: int = SAVE_EVERY,
) -> list[dict]:
    """Run the model on several instances with its weights loaded once (a batch job).

    Each instance is made as `generate` makes it alone (its own generator, trajectory and
    state), one after the other. Every finished instance is kept (`resume.keep`: hard links
    beside its state, under the state's key); an instance whose kept copy matches its key is
    restored instead of made, so a batch Snakemake runs again (it removed every output
    first) makes only what changed or was never finished. The weights load only when an
    instance is to be made.
    """
    if not steps:
        raise ValueError("denoise.steps is empty: name at least one step to decode")
    device = job_device()
    loaded, metas = None, []
    for one in instances:
        kept = Path(one.state_dir) / state_key(**decides_of(spec, one, steps, decode))
        if restore(kept, one.out_dir):
            log.info("%s: restored from %s", one.out_dir, kept)
            metas.append(json.loads((one.out_dir / "generation.json").read_text()))
            continue
        loaded = loaded or load(spec, device)
        metas.append(make(spec, loaded, device, one, steps, decode, save_every, kept))
    return metas


def load(spec: ModelSpec, device: str) -> Loaded:
    """The pipeline built, its LoRA applied and placed on `device`, and the seconds it took."""
    t0 = time.perf_counter()
    pipe = spec.build()
    lora = spec.apply_lora(pipe)  # before placement: offload hooks wrap the final modules
    pipe = place(pipe, spec.runtime, device, spec.pipeline_family.denoisers)
    seconds = time.perf_counter() - t0
    log.info("loaded %s in %.1f s", spec.key, seconds)
    return Loaded(pipe, lora, seconds)


def decides_of(spec: ModelSpec, one: Instance, steps: list[int], decode: str) -> dict:
    """Everything that decides `one`'s video (the settings include the approximate runtime
    values): its trajectory's key is their digest."""
    return {
        "settings": spec.settings(),
        "denoise": {"steps": sorted(steps), "decode": decode},
        "prompt": one.prompt,
        "image": hashlib.sha256(Path(one.image).read_bytes()).hexdigest(),
        "versions": package_versions(PACKAGES),
    }


def make(
    spec: ModelSpec,
    loaded: Loaded,
    device: str,
    one: Instance,
    steps: list[int],
    decode: str,
    save_every: int,
    kept: Path | None = None,
) -> dict:
    """Make `one`'s video and checkpoints with the `loaded` pipeline; `kept`: where its
    finished outputs are kept (a batch job's instance), before its state goes."""
    pipe, lora = loaded.pipe, loaded.lora
    gen, family = spec.generation, spec.pipeline_family
    out_dir, image, prompt = Path(one.out_dir), one.image, one.prompt
    seconds = {"load": loaded.seconds}

    generator = torch.Generator("cpu").manual_seed(gen["seed"])
    call = {"image": load_rgb(image), "prompt": prompt, "generator": generator}
    versions = package_versions(PACKAGES)
    trajectory = contextlib.nullcontext()
    if one.state_dir is not None:
        decides = decides_of(spec, one, steps, decode)
        path = Path(one.state_dir) / f"{state_key(**decides)}.pt"
        trajectory = Trajectory(
            pipe, path, generator, save_every, family.loop_tensors, family.schedulers, decides
        )

    with trajectory as resumable:  # a SIGTERM while decoding keeps the last step's state
        t0 = time.perf_counter()
        with torch.inference_mode():
            with CheckpointRecorder(pipe.scheduler, tuple(steps), "xt" in KINDS[decode]) as rec:
                if resumable:
                    resumable.track(rec)
                output = pipe(**call, output_type="latent", **family.call_kwargs(gen))
            recorded = family.final_latents(pipe, output).cpu()
            # each checkpoint in the form `decode` takes, the family's checks passed before a
            # later stage runs and before anything is written
            states = {
                (step, kind): family.checkpoint_latents(
                    pipe, getattr(rec.checkpoints[step], kind), recorded
                )
                for step in steps
                for kind in KINDS[decode]
            }
            output = family.refine(pipe, output, gen, **call)
        seconds["denoise"] = time.perf_counter() - t0

        t0 = time.perf_counter()
        latents = family.final_latents(pipe, output).cpu()
        final = family.decode(pipe, latents)
        audio = family.final_audio(pipe, output) if gen.get("keep_audio") else None
        write_video(final, out_dir / "video.mp4", gen["fps"], audio)
        checkpoint_size = None  # of the recorded (first) stage's frames
        for (step, kind), state in states.items():
            frames = final if torch.equal(state, latents) else family.decode(pipe, state)
            write_video(frames, out_dir / "denoise" / checkpoint_name(step, kind), gen["fps"])
            checkpoint_size = {"height": int(frames.shape[1]), "width": int(frames.shape[2])}
        seconds["decode"] = time.perf_counter() - t0

        meta = {
            "model": spec.key,
            "settings": spec.settings(),
            "runtime": spec.runtime,
            "lora": lora,
            "seed": gen["seed"],
            "image": str(image),
            "prompt": prompt,
            "denoise": {"steps": list(steps), "decode": decode},
            "frames": int(final.shape[0]),
            "height": int(final.shape[1]),
            "width": int(final.shape[2]),
            # a two-stage model's checkpoints: its first stage
            "checkpoint_size": checkpoint_size,
            "fps": gen["fps"],
            **machine(device),
            "versions": versions,
            "seconds": {k: round(v, 3) for k, v in seconds.items()},
            "peak_memory_mb": peak_memory_mb(device),
        }
        if resumable:  # each attempt: its first step, seconds, steps computed
            meta["resumed_from_step"] = resumable.resumed_from_step
            meta["attempts"] = resumable.record()
        text = json.dumps(meta, indent=2) + "\n"
        write_atomic(out_dir / "generation.json", lambda out: out.write(text.encode()))
        if kept is not None:
            keep(out_dir, OUTPUTS, kept)
        if resumable:
            resumable.finish()
    return meta


def job_device() -> str:
    """The device a job runs on (`cuda` where there is one), its peak memory counted from now."""
    device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda":
        torch.cuda.reset_peak_memory_stats()
    return device


def package_versions(packages: tuple[str, ...]) -> dict:
    """Python's version and each of `packages`'."""
    return {"python": platform.python_version()} | {p: version(p) for p in packages}


def machine(device: str) -> dict:
    """Where a job ran: the device's name and the CPU threads."""
    name = torch.cuda.get_device_name() if device == "cuda" else "cpu"
    return {"device": name, "threads": torch.get_num_threads()}


def peak_memory_mb(device: str) -> dict:
    rss_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    peak = {"cpu_rss": round(rss_kb / 1024, 1)}
    if device == "cuda":
        peak["gpu"] = round(torch.cuda.max_memory_allocated() / 2**20, 1)
    return peak
