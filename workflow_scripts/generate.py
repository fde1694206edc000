"""The body of rule `generate` (one model on one instance) and of its batch rules (one model
on several instances, its weights loaded once): a shell entry."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

from workflow_scripts.common.layout import parse_run_key, run_folder
from workflow_scripts.common.logs import shell_job


def generate_job(argv: list[str]) -> None:
    """Rule `generate`: run one model on one instance with the settings carried in params;
    with `--batch` (a batch rule, `resources.batch` in the registry), on every instance
    given (`--image`, `--prompt` and `--video` name one each, in the same order).

    The model is resolved by `vgi_models.registry.run_spec`: how it runs (`runtime`: offload,
    tiling, attention, compilation) is read from the registry when the job starts; its exact
    values do not change the video, so they are not params (no reruns), and its approximate
    ones must be those the params carry (`vgi_models.runtime`). Nor are where its resumable
    state lives and how often it is saved (`VGI_RESUME_DIR`, `VGI_SAVE_EVERY`, from the shell
    prefix): the state goes under `<VGI_RESUME_DIR>/<run>/<task>/<instance>/`. The run is the
    `model` wildcard; the task and instance are read from the video's path, since naming them
    in the shell command would change its text, which reruns every finished job.
    """
    names = ["model", "settings", "registry", "image", "prompt", "video", "threads"]
    job = shell_job(argv, names, lists=["image", "prompt", "video"], flags=["batch"])
    if not len(job.image) == len(job.prompt) == len(job.video):
        raise SystemExit(
            f"generate: {len(job.image)} --image, {len(job.prompt)} --prompt and "
            f"{len(job.video)} --video: give one of each per instance"
        )
    if len(job.video) > 1 and not job.batch:
        raise SystemExit("generate: several instances need --batch")
    import torch

    from vgi_models.generate import Instance, generate, generate_batch
    from vgi_models.registry import run_spec

    # a condition's or seed's run: its settings carry the seed
    spec, denoise = run_spec(job.registry, parse_run_key(job.model)[0], job.settings)
    torch.set_num_threads(int(job.threads))
    logging.getLogger("vgi_models").setLevel(logging.INFO)  # steps, saves, resumes
    instances = []
    for image, prompt, video in zip(job.image, job.prompt, job.video, strict=True):
        video = Path(video)
        task, instance = video.parts[-3:-1]
        state_dir = run_folder(os.environ["VGI_RESUME_DIR"], job.model, task, instance)
        instances.append(Instance(image, prompt, video.parent, state_dir))
    denoising = (denoise["steps"], denoise["decode"], int(os.environ["VGI_SAVE_EVERY"]))
    if job.batch:
        metas = generate_batch(spec, instances, *denoising)
    else:
        (one,) = instances
        args = (one.image, one.prompt, *denoising[:2], one.out_dir, one.state_dir)
        metas = [generate(spec, *args, denoising[2])]
    for meta in metas:
        print(json.dumps(meta["seconds"]))
