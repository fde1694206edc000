"""The image judge (VGI-Bench, Appendix C.2 and Table 19): one call per generated image.

The call shows the input image (the starting state), the reference image where the
instance has one and the generated image, with the task, its image-generation prompt and
the reference description and answer where there are ones. Success needs task
correctness and background preservation (against the input, with Table 19's failures and
tolerances, `templates/image.txt`); the reply is one binary `success` with its
`reasoning`, as Table 19 asks: no completeness tier, no rubric. A generated image that is
missing or does not decode, or a reply still unusable after the client's retries, is the
image's `error`; a failure of the service fails the job before anything is written
(`jobs.run_vlm`).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from PIL import Image

from workflow_scripts.common.layout import GENERATION_FAILED, failed_generation
from workflow_scripts.judge import prompts
from workflow_scripts.judge.client import JudgeCallError, Request
from workflow_scripts.judge.frames import encode_image
from workflow_scripts.judge.jobs import judge_files, unreadable
from workflow_scripts.judge.schemas import TEXT, object_schema

REPLY = object_schema(success={"type": "boolean"}, reasoning=TEXT)


def error_document(reason: str, calls: int = 0, tokens: dict | None = None) -> dict:
    """The score of an image the judge could not judge (`calls`: the attempts sent)."""
    unjudged = dict.fromkeys(REPLY["properties"])
    costs = {"calls": calls, "cached_calls": 0, "tokens": tokens or {}, "model_version": None}
    return {"status": "error", "reason": reason, **unjudged, **costs}


async def judge_image(client, instance: dict, image: Path, judge: dict) -> dict:
    """The score document of one generated image (`judge`: the rule's judge params;
    `instance`: id, task, level, `image_prompt`, `gt_text`, `answer` and the `image` and
    `gt_image` paths). `calls` counts the attempts sent, `cached_calls` the cache hits, `tokens` the
    reply's usage (cached or not). ServiceError is raised."""
    if reason := failed_generation(image):
        return error_document(f"{GENERATION_FAILED}{reason}")
    long_side = judge["protocol"]["image_long_side"]
    try:
        generated = await asyncio.to_thread(encode_image, image, long_side)
    except (OSError, Image.DecompressionBombError) as error:
        return error_document(unreadable("image", image, error))

    def encode(path):
        return path and encode_image(path, long_side)

    references = await asyncio.gather(
        asyncio.to_thread(encode, instance["image"]),
        asyncio.to_thread(encode, instance.get("gt_image")),
    )
    templates = judge["prompts"]
    parts = prompts.image(templates, instance, *references, generated)
    request = Request("image", parts, REPLY, templates["image_system.txt"])
    try:
        reply = await client.ask(request)
    except JudgeCallError as error:
        return error_document(error.reason, error.attempts, dict(error.usage))
    return {
        "status": "ok",
        **reply.data,
        "calls": 0 if reply.cached else reply.attempts,
        "cached_calls": int(reply.cached),
        "tokens": dict(reply.usage),
        "model_version": reply.model_version,
    }


def judge_image_job(smk) -> None:
    """Rule `judge_image`: judge every generated image of one (model, task)
    (`input.images`, `<outdir>/<model>/<task>/<instance>/image.png`); writes
    `<output>/<instance>/score.json`."""
    judge = json.loads(smk.params.judge)

    async def judge_one(client, instance: dict, image: Path) -> dict:
        return {"score": await judge_image(client, instance, image, judge)}

    judge_files(smk, [Path(image) for image in smk.input.images], judge_one)
