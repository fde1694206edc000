"""The bodies of the rules' scripts: unpack the Snakemake job, call the packages, log."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from pathlib import Path

import pandas as pd
import yaml

from workflow_scripts.files import write_json


@contextlib.contextmanager
def job_log(smk):
    """Send the job's stdout, stderr and logging (progress bars included) to its log file."""
    Path(smk.log[0]).parent.mkdir(parents=True, exist_ok=True)
    with (
        open(smk.log[0], "w", encoding="utf-8") as log,
        contextlib.redirect_stdout(log),
        contextlib.redirect_stderr(log),
    ):
        handler = logging.StreamHandler(log)
        logging.getLogger().addHandler(handler)
        try:
            yield
        finally:
            logging.getLogger().removeHandler(handler)


def generate_job(smk) -> None:
    """Rule `generate`: run one model on one instance with the settings carried in params.

    How the model runs (`runtime`: offload, tiling, attention) is read from the registry
    when the job starts: it does not change the video, so it is not a param (no reruns).
    """
    import torch

    from vgi_models.generate import generate
    from vgi_models.registry import load_registry

    model = smk.wildcards.model
    settings = json.loads(smk.params.settings)
    denoise = settings.pop("denoise")
    with open(smk.config["model_registry"], encoding="utf-8") as registry:
        settings["runtime"] = yaml.safe_load(registry)[model].get("runtime", {})
    spec = load_registry({model: settings})[model]
    with job_log(smk):
        torch.set_num_threads(smk.threads)
        meta = generate(
            spec,
            image=smk.input.image,
            prompt=smk.params.prompt,
            steps=denoise["steps"],
            decode=denoise["decode"],
            out_dir=Path(smk.output.video).parent,
        )
        print(json.dumps(meta["seconds"]))


def judge_job(smk) -> None:
    """Rule `judge`: score one video with the VLM judge; calls are cached under the outdir.

    A judge call that failed after retries leaves score.json with status `error` (the job
    itself succeeds); `--forcerun judge` retries, paying only for calls not yet cached.
    """
    from workflow_scripts.judge.client import VLMClient
    from workflow_scripts.judge.protocol import judge_video
    from workflow_scripts.judge.settings import Protocol

    settings = json.loads(smk.params.judge)
    instance = json.loads(smk.params.instance)
    instance.update(image=smk.input.image, gt_image=smk.input.get("gt") or None)
    cache = Path(smk.config["outdir"]) / "cache" / "judge"
    protocol = Protocol(**settings["protocol"])

    async def judge() -> dict:
        async with VLMClient.from_config(smk.config["judge"], cache) as client:
            return await judge_video(client, instance, Path(smk.input.video), protocol)

    with job_log(smk):
        logging.getLogger("workflow_scripts.judge").setLevel(logging.INFO)  # one line a call
        documents = asyncio.run(judge())
        for name in ("completeness", "rubric", "score"):
            write_json(smk.output[name], documents[name])
        score = documents["score"]
        keys = ("status", "reason", "final", "calls", "cached_calls")
        print(json.dumps({key: score[key] for key in keys if key in score}))


def select_instances_job(smk) -> None:
    """Rule `select_instances`: write the chosen instance ids with their task and level."""
    ids = pd.Series(smk.params.ids, name="instance")
    table = ids.str.extract(r"^(?P<task>.+)_lv(?P<level>\d+)_(?P<id>.+)$")
    table.insert(0, "instance", ids)
    table["subset"] = smk.params.subset
    table["subset_seed"] = smk.params.seed
    with job_log(smk):
        table.to_csv(smk.output[0], index=False)
        print(f"{len(table)} instances selected ({smk.params.subset}, seed {smk.params.seed})")
