"""The body of an image model's generate job: one image model on one instance (a shell entry)."""

from __future__ import annotations

import json
from pathlib import Path

from workflow_scripts.common.layout import parse_run_key
from workflow_scripts.common.logs import shell_job


def generate_image_job(argv: list[str]) -> None:
    """Run one image model (`output: image`) on one instance's input image and prompt; its
    `image.png` and `generation.json` go into the folder of `--output` (the image's path).

    As for a video (`workflow_scripts.generate`), the model is resolved by
    `vgi_models.registry.run_spec`: its settings from the job's params, how it runs from the
    registry when the job starts.
    """
    job = shell_job(argv, ["model", "settings", "registry", "image", "prompt", "output", "threads"])
    import torch

    from vgi_models.generate_image import generate_image
    from vgi_models.registry import run_spec

    spec, _ = run_spec(job.registry, parse_run_key(job.model)[0], job.settings)  # a seed's run
    torch.set_num_threads(int(job.threads))
    meta = generate_image(spec, image=job.image, prompt=job.prompt, out_dir=Path(job.output).parent)
    print(json.dumps(meta["seconds"]))
