"""The body of rule `generate`: one model on one instance (a shell entry)."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

from workflow_scripts.common.layout import parse_run_key, run_folder
from workflow_scripts.common.logs import shell_job


def generate_job(argv: list[str]) -> None:
    """Rule `generate`: run one model on one instance with the settings carried in params.

    The model is resolved by `vgi_models.registry.run_spec`: how it runs (`runtime`: offload,
    tiling, attention, compilation) is read from the registry when the job starts; its exact
    values do not change the video, so they are not params (no reruns), and its approximate
    ones must be those the params carry (`vgi_models.runtime`). Nor are where its resumable
    state lives and how often it is saved (`VGI_RESUME_DIR`, `VGI_SAVE_EVERY`, from the shell
    prefix): the state goes under `<VGI_RESUME_DIR>/<run>/<task>/<instance>/`. The run is the
    `model` wildcard; the task and instance are read from the video's path, since naming them
    in the shell command would change its text, which reruns every finished job.
    """
    job = shell_job(argv, ["model", "settings", "registry", "image", "prompt", "video", "threads"])
    import torch

    from vgi_models.generate import generate
    from vgi_models.registry import run_spec

    # a condition's or seed's run: its settings carry the seed
    spec, denoise = run_spec(job.registry, parse_run_key(job.model)[0], job.settings)
    torch.set_num_threads(int(job.threads))
    logging.getLogger("vgi_models").setLevel(logging.INFO)  # steps, saves, resumes
    video = Path(job.video)
    task, instance = video.parts[-3:-1]
    meta = generate(
        spec,
        image=job.image,
        prompt=job.prompt,
        steps=denoise["steps"],
        decode=denoise["decode"],
        out_dir=video.parent,
        state_dir=run_folder(os.environ["VGI_RESUME_DIR"], job.model, task, instance),
        save_every=int(os.environ["VGI_SAVE_EVERY"]),
    )
    print(json.dumps(meta["seconds"]))
