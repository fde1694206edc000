"""The VLM jobs: every video of one (model, task) in one event loop, with one client.

A video's calls come in sequential phases (completeness and the round-1 windows, then
round 2, then the verdict), so one video keeps only a few calls in flight; a job judges
all its videos at once and the client keeps up to `judge.max_concurrency` calls in
flight across them (the shared rate limit keeps the run under the API's quota).

Each job reads its instances' texts and images from the task's sheet (rule
`instance_sheet`) and writes one folder, one entry per instance (`common.layout`). A call
whose reply stays unusable, or a video that cannot be decoded, is that instance's
`error`; a failure of the service fails the job before anything is written, so that a
plain rerun after the fix redoes exactly the jobs it failed (answered calls are cached).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import shlex
import sys
from argparse import Namespace
from collections.abc import Callable, Sequence
from pathlib import Path

import decord

from workflow_scripts.common.files import write_json
from workflow_scripts.judge.client import ServiceError, VLMClient
from workflow_scripts.judge.frames import video_duration
from workflow_scripts.judge.protocol import SCORE_KEYS, judge_video
from workflow_scripts.judge.settings import Protocol
from workflow_scripts.judge.summary import FAILURE


def vlm_job(argv: list[str], names: Sequence[str] = ()) -> tuple[Namespace, dict]:
    """A VLM job's options and its task's sheet: `--client` (the judge config, JSON),
    `--cache`, `--sheet`, `--out` (the job's folder), `--inputs` (one per instance: its
    video, or its checkpoint folder) and `names`. Logs to stderr, which the rule sends to
    the job's log with stdout; one line per call."""
    parser = argparse.ArgumentParser(prog=Path(sys.argv[0]).name)
    for name in ("client", "cache", "sheet", "out", *names):
        parser.add_argument(f"--{name}", required=True)
    parser.add_argument("--inputs", nargs="+", required=True)
    logging.basicConfig(stream=sys.stderr, format="%(message)s")
    logging.getLogger("workflow_scripts.judge").setLevel(logging.INFO)
    job = parser.parse_args(argv)
    return job, json.loads(Path(job.sheet).read_text(encoding="utf-8"))


def run_vlm_calls(job: Namespace, work: Callable) -> list:
    """`await work(client)` under a client made from the job's `--client` and `--cache`.
    A failure of the service ends the job with a message and exit status 1, writing
    nothing."""

    async def main() -> list:
        async with VLMClient.from_config(json.loads(job.client), job.cache) as client:
            return await work(client)

    try:
        return asyncio.run(main())
    except ServiceError as error:
        sys.exit(
            f"{FAILURE}{error.reason}\nNothing was written for this job: fix the "
            "key, quota or endpoint and run snakemake again."
        )


async def judge_file(client, instance: dict, video: Path, judge: dict) -> dict:
    """The judge's documents of one video (`judge`: the rule's judge params), or an
    `error` without calls when the video cannot be decoded."""
    try:
        await asyncio.to_thread(video_duration, video)
    except (RuntimeError, decord.DECORDError, ZeroDivisionError) as error:
        return unreadable_video(video, error)
    protocol = Protocol(**judge["protocol"])
    return await judge_video(client, instance, video, protocol, judge["prompts"])


def unreadable_video(video: Path, error: Exception) -> dict:
    """The judge's documents for a video that cannot be decoded: an `error`, no calls."""
    reason = (
        f"video unreadable ({type(error).__name__}); regenerate it with "
        f"`snakemake --cores 1 --force {shlex.quote(str(video))}`"
    )
    status = {"status": "error", "reason": reason}
    score = {**status, **dict.fromkeys(SCORE_KEYS), "calls": 0, "cached_calls": 0, "tokens": {}}
    return {"completeness": status, "rubric": status, "score": score}


def summary(documents: Sequence[dict]) -> str:
    """One line for the job's log: documents ok and in error, calls sent and cached."""
    count = {status: sum(d["status"] == status for d in documents) for status in ("ok", "error")}
    calls = {key: sum(d.get(key, 0) for d in documents) for key in ("calls", "cached_calls")}
    return json.dumps({"documents": len(documents), **count, **calls})


def judge_job(argv: list[str]) -> None:
    """Rule `judge`: score every video of one (model, task) (`--inputs`: the videos);
    writes `<out>/<instance>/{completeness,rubric,score}.json`."""
    job, sheet = vlm_job(argv, ["judge"])
    judge, videos = json.loads(job.judge), [Path(video) for video in job.inputs]

    async def judge_all(client) -> list[dict]:
        judged = (judge_file(client, sheet[v.parent.name], v, judge) for v in videos)
        return await asyncio.gather(*judged)

    judged = run_vlm_calls(job, judge_all)
    for video, documents in zip(videos, judged, strict=True):
        for name, document in documents.items():
            write_json(Path(job.out) / video.parent.name / f"{name}.json", document)
    print(summary([documents["score"] for documents in judged]))
