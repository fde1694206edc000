"""The bodies of the rules' entry points: unpack the job, call the packages, log.

`script:` entries get Snakemake's job object; the per-instance rules (`generate`, `judge`,
`label_transitions`) are shell commands whose options name the job's files and params.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import shlex
import sys
from argparse import Namespace
from pathlib import Path

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


def shell_job(argv: list[str], required: list[str], optional: list[str] = ()) -> Namespace:
    """Set up a shell entry's job: its `--name value` options (each of `required` must be
    given, `optional` ones default to ""), and logging to stderr, which the rule redirects
    to the job's log file together with stdout."""
    parser = argparse.ArgumentParser(prog=Path(sys.argv[0]).name)
    for name in required:
        parser.add_argument(f"--{name}", required=True)
    for name in optional:
        parser.add_argument(f"--{name}", default="")
    logging.basicConfig(stream=sys.stderr, format="%(message)s")
    return parser.parse_args(argv)


def generate_job(argv: list[str]) -> None:
    """Rule `generate`: run one model on one instance with the settings carried in params.

    How the model runs (`runtime`: offload, tiling, attention) is read from the registry
    when the job starts: it does not change the video, so it is not a param (no reruns).
    """
    job = shell_job(argv, ["model", "settings", "registry", "image", "prompt", "video", "threads"])
    import torch

    from vgi_models.generate import generate
    from vgi_models.registry import load_registry

    settings = json.loads(job.settings)
    denoise = settings.pop("denoise")
    with open(job.registry, encoding="utf-8") as registry:
        settings["runtime"] = yaml.safe_load(registry)[job.model].get("runtime", {})
    spec = load_registry({job.model: settings})[job.model]
    torch.set_num_threads(int(job.threads))
    meta = generate(
        spec,
        image=job.image,
        prompt=job.prompt,
        steps=denoise["steps"],
        decode=denoise["decode"],
        out_dir=Path(job.video).parent,
    )
    print(json.dumps(meta["seconds"]))


def run_vlm_calls(main) -> dict:
    """`asyncio.run(main())` for a VLM job. A failure of the service ends the job with a
    message and exit status 1 before anything is written, so that a plain rerun after the
    fix redoes exactly the jobs it failed (calls already answered are cached)."""
    from workflow_scripts.judge.client import ServiceError
    from workflow_scripts.judge.summary import FAILURE

    logging.getLogger("workflow_scripts.judge").setLevel(logging.INFO)  # one line a call
    try:
        return asyncio.run(main())
    except ServiceError as error:
        sys.exit(
            f"{FAILURE}{error.reason}\nNothing was written for this job: fix the "
            "key, quota or endpoint and run snakemake again."
        )


def judge_job(argv: list[str]) -> None:
    """Rule `judge`: score one video with the VLM judge; calls are cached in `--cache`.
    The completeness and rubric passes go to the folder `--passes`, the score to `--score`.

    A call whose reply stays unusable, or a video that cannot be decoded, leaves score.json
    with status `error` (the job itself succeeds); a failure of the service fails the job.
    """
    names = ["video", "image", "judge", "instance", "client", "cache", "passes", "score"]
    job = shell_job(argv, names, optional=["gt"])
    import decord

    from workflow_scripts.judge.client import VLMClient
    from workflow_scripts.judge.frames import video_duration
    from workflow_scripts.judge.protocol import judge_video
    from workflow_scripts.judge.settings import Protocol

    instance = json.loads(job.instance)
    instance.update(image=job.image, gt_image=job.gt or None)
    settings = json.loads(job.judge)
    protocol = Protocol(**settings["protocol"])

    async def judge() -> dict:
        async with VLMClient.from_config(json.loads(job.client), job.cache) as client:
            return await judge_video(
                client, instance, Path(job.video), protocol, settings["prompts"]
            )

    try:
        video_duration(job.video)
    except (RuntimeError, decord.DECORDError, ZeroDivisionError) as error:
        documents = unreadable_video(job.video, error)
    else:
        documents = run_vlm_calls(judge)
    for name in ("completeness", "rubric"):
        write_json(Path(job.passes) / f"{name}.json", documents[name])
    write_json(job.score, documents["score"])
    score = documents["score"]
    keys = ("status", "reason", "final", "calls", "cached_calls")
    print(json.dumps({key: score[key] for key in keys if key in score}))


def unreadable_video(video: str, error: Exception) -> dict:
    """The judge's documents for a video that cannot be decoded: an `error`, no calls."""
    from workflow_scripts.judge.protocol import SCORE_KEYS

    reason = (
        f"video unreadable ({type(error).__name__}); regenerate it with "
        f"`snakemake --cores 1 --force {shlex.quote(video)}`"
    )
    status = {"status": "error", "reason": reason}
    score = {**status, **dict.fromkeys(SCORE_KEYS), "calls": 0, "cached_calls": 0, "tokens": {}}
    return {"completeness": status, "rubric": status, "score": score}


def select_instances_job(smk) -> None:
    """Rule `select_instances`: write the chosen instance ids with their task and level."""
    import pandas as pd

    ids = pd.Series(smk.params.ids, name="instance")
    table = ids.str.extract(r"^(?P<task>.+)_lv(?P<level>\d+)_(?P<id>.+)$")
    table.insert(0, "instance", ids)
    table["subset"] = smk.params.subset
    table["subset_seed"] = smk.params.seed
    with job_log(smk):
        table.to_csv(smk.output[0], index=False)
        print(f"{len(table)} instances selected ({smk.params.subset}, seed {smk.params.seed})")
