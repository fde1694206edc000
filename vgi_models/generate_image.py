"""One image job: an image model's edit of one input image, and `generation.json`."""

from __future__ import annotations

import io
import json
import time
from pathlib import Path

from vgi_models.generate import job_device, machine, package_versions, peak_memory_mb
from vgi_models.input_image import load_rgb
from vgi_models.registry import ModelSpec
from vgi_models.runtime import place
from vgi_models.state import write_atomic

PACKAGES = ("torch", "diffusers", "transformers")


def generate_image(spec: ModelSpec, image: str, prompt: str, out_dir: Path) -> dict:
    """Run the image model (`output: image`, an `vgi_models.image_families` pipeline) on one
    input image; write `image.png` and `generation.json` into `out_dir` (each atomically) and
    return the metadata written. The same settings and seed give the same PNG bytes."""
    out_dir = Path(out_dir)
    device = job_device()
    family, seconds = spec.pipeline_family, {}

    t0 = time.perf_counter()
    pipe = place(spec.build(), spec.runtime, device, family.denoisers)
    seconds["load"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    edited = family.generate(pipe, load_rgb(image), prompt, spec.generation)
    seconds["generate"] = time.perf_counter() - t0

    png = io.BytesIO()
    edited.save(png, format="PNG")
    write_atomic(out_dir / "image.png", lambda out: out.write(png.getvalue()))
    meta = {
        "model": spec.key,
        "status": "ok",
        "settings": spec.settings(),
        "runtime": spec.runtime,
        "seed": spec.generation["seed"],
        "image": str(image),
        "prompt": prompt,
        "height": edited.height,
        "width": edited.width,
        **machine(device),
        "versions": package_versions(PACKAGES),
        "seconds": {k: round(v, 3) for k, v in seconds.items()},
        "peak_memory_mb": peak_memory_mb(device),
    }
    text = json.dumps(meta, indent=2) + "\n"
    write_atomic(out_dir / "generation.json", lambda out: out.write(text.encode()))
    return meta
