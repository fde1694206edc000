"""Transition labels by the VLM (DESIGN, "Transition labels"): how the answer changes
between checkpoints.

For each pair of decoded checkpoints one VLM call sees the input image, the ground truth
where there is one, the task's goal and checklist and `frames_per_checkpoint` frames of
each checkpoint video, and returns one of `labels.LABELS`. A human label takes
precedence; the VLM is still asked, so both labels are kept and agreement can be
measured. A pair's evidence and states are the VLM's reading. A call that fails after the
client's retries makes the document `error` with a reason; the pair is listed only if a
human labelled it.
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from vgi_models.video import checkpoint_name
from workflow_scripts.common.files import write_json
from workflow_scripts.common.layout import frame_store
from workflow_scripts.common.logs import job_log
from workflow_scripts.judge.frames import VideoFrames, encode_image
from workflow_scripts.judge.jobs import run_vlm, summary
from workflow_scripts.judge.settings import Protocol
from workflow_scripts.transitions.labels import TRANSITION
from workflow_scripts.transitions.settings import Pair

if TYPE_CHECKING:
    from workflow_scripts.judge.client import VLMClient


def _pair(a: int, b: int, reply: dict | None, human: str | None) -> dict:
    """A pair's entry: the human label if any, else the VLM's; both kept."""
    reading = reply or dict.fromkeys(("label", "earlier_state", "later_state", "evidence"))
    return {
        "from": a,
        "to": b,
        "label": human or reading["label"],
        "source": "human" if human else "vlm",
        "evidence": reading["evidence"],
        "earlier_state": reading["earlier_state"],
        "later_state": reading["later_state"],
        "vlm_label": reading["label"],
        "human_label": human,
    }


async def label_pairs(
    client: VLMClient,
    instance: Mapping,
    denoise: Path,
    pairs: Sequence[Pair],
    human: Sequence[Mapping],
    frames_per_checkpoint: int,
    protocol: Protocol,
    templates: Mapping[str, str],
    prepared: Path | None = None,
) -> dict:
    """transitions.json of one video: one call per pair, run together (the client caps them).

    `instance` holds what `judge.settings.instance_params` gives (texts, and the `image` and
    `gt_image` paths); `denoise` the checkpoint videos; `human` this video's human
    labels; `templates` the transition templates by file name; `prepared` the (model,
    task)'s folder of prepared frames (rule prepare_frames), if any. `calls` counts the
    requests sent (every attempt, failed calls included), `cached_calls` the cache hits,
    `tokens` the usage of every reply (cached ones included), `model_version` the version
    the backend reported.
    """
    from workflow_scripts.judge.client import JudgeCallError, Request
    from workflow_scripts.judge.prompts import references
    from workflow_scripts.transitions import prompts  # the VLM SDKs

    def prepare() -> tuple[tuple, dict]:
        size, gt_image = protocol.image_long_side, instance.get("gt_image")
        refs = references(
            encode_image(instance["image"], size),
            gt_image and encode_image(gt_image, size),
            instance.get("gt_text"),
        )
        frames = {}
        for step in sorted({step for pair in pairs for step in pair}):
            video = denoise / checkpoint_name(step, "x0")
            store = prepared and frame_store(prepared, video)
            side = protocol.frame_long_side
            frames[step] = VideoFrames(video, side, store).uniform(frames_per_checkpoint)
        return refs, frames

    refs, frames = await asyncio.to_thread(prepare)  # off the event loop: calls go on
    counts, tokens, versions = Counter(calls=0, cached_calls=0), Counter(), set()
    system = templates["transition_system.txt"]

    async def ask(a: int, b: int) -> dict | JudgeCallError:
        parts = prompts.transition(templates, refs, (a, frames[a]), (b, frames[b]), instance)
        try:
            reply = await client.ask(Request("transition", parts, TRANSITION, system))
        except JudgeCallError as err:
            counts["calls"] += err.attempts
            tokens.update(err.usage)
            return err
        if reply.cached:
            counts["cached_calls"] += 1
        else:
            counts["calls"] += reply.attempts
        tokens.update(reply.usage)
        versions.update([reply.model_version] if reply.model_version else [])
        return reply.data

    replies = await asyncio.gather(*(ask(a, b) for a, b in pairs))
    human_of = {(h["from"], h["to"]): h["label"] for h in human}
    listed, errors = [], []
    for (a, b), reply in zip(pairs, replies, strict=True):
        if isinstance(reply, JudgeCallError):
            errors.append(f"pair {a}->{b}: {reply.reason}")
            reply = None
        if reply or (a, b) in human_of:
            listed.append(_pair(a, b, reply, human_of.get((a, b))))
    status = {"status": "error", "reason": "; ".join(errors)} if errors else {"status": "ok"}
    version = ", ".join(sorted(versions)) or None
    return {**status, "pairs": listed, **counts, "tokens": dict(tokens), "model_version": version}


def label_transitions_job(smk) -> None:
    """Rule `label_transitions`: label the checkpoint pairs of every generated instance of
    one (model, task) (`input.denoise`: their folders, `input.frames`: their prepared
    frames; `params.human`: the task's human labels by instance); writes
    `<output>/<instance>.json`."""
    settings, judge = json.loads(smk.params.transitions), json.loads(smk.params.judge)
    human = json.loads(smk.params.human)
    pairs = [tuple(pair) for pair in settings["pairs"]]
    folders = [Path(folder) for folder in smk.input.denoise]

    async def label_all(client) -> list[dict]:
        labelled = (
            label_pairs(
                client,
                smk.params.instances[denoise.parent.name],
                denoise,
                pairs,
                human.get(denoise.parent.name, []),
                settings["frames_per_checkpoint"],
                Protocol(**judge["protocol"]),
                judge["prompts"],
                Path(smk.input.frames),
            )
            for denoise in folders
        )
        return await asyncio.gather(*labelled)

    with job_log(smk):
        documents = run_vlm(smk, label_all)
        for denoise, document in zip(folders, documents, strict=True):
            write_json(Path(smk.output[0]) / f"{denoise.parent.name}.json", document)
        print(summary(documents))
