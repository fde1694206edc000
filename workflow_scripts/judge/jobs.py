"""The VLM jobs: every video of one (model, task) in one event loop, with one client.

A video's calls come in sequential phases (completeness and the round-1 windows, then
round 2, then the verdict), so one video keeps only a few calls in flight; a job judges
all its videos at once and the client keeps up to `judge.max_concurrency` calls in
flight across them (the shared rate limit keeps the run under the API's quota).

Each job gets its instances' texts and image paths as params and writes one folder, one
entry per instance (`common.layout`). A call
whose reply stays unusable, or a video that cannot be decoded, is that instance's
`error`; a failure of the service fails the job before anything is written, so that a
plain rerun after the fix redoes exactly the jobs it failed (answered calls are cached).
The image judge's jobs (`judge.image`) run the same way, one call per image.
"""

from __future__ import annotations

import asyncio
import json
import logging
import shlex
from collections.abc import Callable, Sequence
from pathlib import Path

import decord

from workflow_scripts.common.files import write_json
from workflow_scripts.common.layout import GENERATION_FAILED, failed_generation, frame_store
from workflow_scripts.common.logs import fail_job, job_log
from workflow_scripts.judge.client import ServiceError, VLMClient
from workflow_scripts.judge.frames import video_duration
from workflow_scripts.judge.official import SETTING, OfficialPrompts, module_file
from workflow_scripts.judge.protocol import judge_video
from workflow_scripts.judge.replies import SCORE_KEYS
from workflow_scripts.judge.settings import MAIN, Protocol, judge_configs
from workflow_scripts.judge.summary import FAILURE


def client_config(smk) -> dict:
    """The judge config the job's client is made from: `judge`, or for a job of rule
    `judge_variant` (wildcard `judge`) that variant of `judges:` merged over it."""
    name = getattr(getattr(smk, "wildcards", None), "judge", MAIN)
    return judge_configs(smk.config)[name]


def run_vlm(smk, work: Callable) -> list:
    """`await work(client)` for Snakemake's job `smk`, under one client made from the run's
    judge config (`client_config`: backend, key variable, endpoint, pacing: never params),
    caching calls under `<outdir>/cache/judge`, shared by every judge and variant, one log
    line per call. A failure of the service ends the job with a message and exit status 1
    before anything is written."""
    logging.getLogger("workflow_scripts.judge").setLevel(logging.INFO)
    cache = Path(smk.config["outdir"]) / "cache" / "judge"

    async def main() -> list:
        async with VLMClient.from_config(client_config(smk), cache) as client:
            return await work(client)

    try:
        return asyncio.run(main())
    except ServiceError as error:
        fail_job(  # one line: the status page shows a failed job's last line
            f"{FAILURE}{error.reason} (nothing was written for this job: fix the key, quota "
            "or endpoint and run snakemake again)"
        )


def official_prompts(smk, judge: dict) -> OfficialPrompts | None:
    """The official judge's prompts of the job's judge (`judge`: the rule's params), read
    from the checkout its config names (`judge.official_prompts`), or None; a ValueError
    when the module is not the one the params were made from (edited since: run again)."""
    if "official_prompts" not in judge:
        return None
    checkout = client_config(smk)["official_prompts"]
    prompts = OfficialPrompts(checkout)
    if prompts.module.__vgi_digest__ != judge["official_prompts"]:
        raise ValueError(
            f"{SETTING}: {module_file(checkout)} changed after this run started; run "
            "snakemake again (the judge jobs rerun with it)"
        )
    return prompts


async def judge_file(
    client, instance: dict, video: Path, judge: dict, prepared=None, official=None
) -> dict:
    """The judge's documents of one video (`judge`: the rule's judge params; `prepared`:
    the (model, task)'s folder of prepared frames, if any; `official`: the official
    judge's prompts, `official_prompts`), or an `error` without calls when the video
    cannot be decoded or was never made (a video API's refusal)."""
    if reason := failed_generation(video):
        return error_documents(f"{GENERATION_FAILED}{reason}")
    try:
        await asyncio.to_thread(video_duration, video)
    except (RuntimeError, decord.DECORDError, ZeroDivisionError) as error:
        return unreadable_video(video, error)
    protocol, store = Protocol(**judge["protocol"]), prepared and frame_store(prepared, video)
    return await judge_video(client, instance, video, protocol, judge["prompts"], store, official)


def unreadable_video(video: Path, error: Exception) -> dict:
    """The judge's documents for a video that cannot be decoded: an `error`, no calls."""
    return error_documents(unreadable("video", video, error))


def unreadable(what: str, path: Path, error: Exception) -> str:
    """The reason a generated file (`what`: video, image) that cannot be decoded is an
    `error`, with the command that makes it again."""
    return (
        f"{what} unreadable ({type(error).__name__}); regenerate it with "
        f"`snakemake --cores 1 --force {shlex.quote(str(path))}`"
    )


def error_documents(reason: str) -> dict:
    """The judge's documents of an instance it could not judge: an `error`, no calls."""
    status = {"status": "error", "reason": reason}
    score = {**status, **dict.fromkeys(SCORE_KEYS), "calls": 0, "cached_calls": 0, "tokens": {}}
    return {"completeness": status, "rubric": status, "score": score}


def summary(documents: Sequence[dict]) -> str:
    """One line for the job's log: documents ok and in error, calls sent and cached."""
    count = {status: sum(d["status"] == status for d in documents) for status in ("ok", "error")}
    calls = {key: sum(d.get(key, 0) for d in documents) for key in ("calls", "cached_calls")}
    return json.dumps({"documents": len(documents), **count, **calls})


def judge_files(smk, files: Sequence[Path], judge_one: Callable) -> None:
    """Judge every file of one (model, task), each under its instance's folder name:
    `await judge_one(client, instance, file)` gives its documents by name, written as
    `<output>/<instance>/<name>.json` once all are judged (`run_vlm`), and the job's
    summary line of their `score` documents."""
    instances = smk.params.instances

    async def judge_all(client) -> list[dict]:
        judged = (judge_one(client, instances[f.parent.name], f) for f in files)
        return await asyncio.gather(*judged)

    with job_log(smk):
        judged = run_vlm(smk, judge_all)
        for file, documents in zip(files, judged, strict=True):
            for name, document in documents.items():
                write_json(Path(smk.output[0]) / file.parent.name / f"{name}.json", document)
        print(summary([documents["score"] for documents in judged]))


def judge_job(smk) -> None:
    """Rule `judge` (or `judge_variant`): score every video of one (model, task), with the
    frames prepared for the main judge (`input.frames`, rule `judge` only); writes
    `<output>/<instance>/{completeness,rubric,score}.json`."""
    judge = json.loads(smk.params.judge)
    prepared = getattr(smk.input, "frames", None)
    official = official_prompts(smk, judge)  # before any call

    def judge_one(client, instance: dict, video: Path):
        return judge_file(client, instance, video, judge, prepared and Path(prepared), official)

    judge_files(smk, [Path(video) for video in smk.input.videos], judge_one)
