"""The judge protocol of DESIGN ("Judge protocol"): completeness, rubric, final score.

With `Protocol`'s defaults: completeness sends the whole clip at 2 fps in one call
(tier 0/1/2 -> 0/0.5/1). The rubric runs coarse to fine: round 1 cuts the clip sampled
at 4 fps into windows of 10 frames, consecutive windows sharing one frame (window k
holds sampled frames [9k, 9k + 10); the last window is shorter but keeps at least 2
frames, since a lone frame is already the previous window's last); round 2 re-samples
at 8 fps the intervals of +-0.5 s around every frame round 1 nominated (merged where
they overlap, clipped to the clip), windowed the same way per interval. A nominated
index that is not among its window's frames is ignored; round-2 nominations are
recorded, not followed. A window reply citing a frame not shown, or leaving a shown
frame without a comment, is rejected (and retried). One text-only call then turns all
comments into de-duplicated violation counts x_i per checklist item:
rubric = mean_i 1 / (x_i + 1), final = completeness x rubric, strict success = tier 2
and every x_i = 0.

A judge call that fails after the client's retries makes the instance `error` with a
reason, never a score; the documents hold whatever was judged before.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path

from workflow_scripts.judge import prompts, schemas
from workflow_scripts.judge.client import JudgeCallError, Request, VLMClient
from workflow_scripts.judge.frames import Frame, encode_image, sample_frames, video_duration
from workflow_scripts.judge.settings import Protocol


def windows(frames: Sequence[Frame], size: int, overlap: int) -> list[list[Frame]]:
    """Consecutive windows of `size` frames sharing `overlap`; none made only of shared ones."""
    step = size - overlap
    return [list(frames[i : i + size]) for i in range(0, max(len(frames) - overlap, 1), step)]


def intervals(times: Sequence[float], radius: float, end: float) -> list[tuple[float, float]]:
    """[t - radius, t + radius] around each time, clipped to [0, end], overlaps merged."""
    merged: list[tuple[float, float]] = []
    for t in sorted(times):
        start, stop = max(t - radius, 0.0), min(t + radius, end)
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], stop))
        else:
            merged.append((start, stop))
    return merged


def scores(tier: int, violations: Sequence[int]) -> dict:
    """Completeness, rubric, final and strict success of a tier and violation counts."""
    completeness = tier / 2
    rubric = sum(1 / (x + 1) for x in violations) / len(violations)
    return {
        "tier": tier,
        "completeness": completeness,
        "violations": list(violations),
        "rubric": rubric,
        "final": completeness * rubric,
        "strict_success": tier == 2 and not any(violations),
    }


def _window_check(frames: Sequence[Frame]):
    """Reject a window reply citing frames not shown, or leaving a shown frame uncovered."""
    shown = {frame.index for frame in frames}

    def validate(data: dict) -> None:
        cited = {i for evaluation in data["evaluations"] for i in evaluation["frame_indices"]}
        if cited - shown:
            raise ValueError(f"evaluations cite frames not shown: {sorted(cited - shown)}")
        if shown - cited:
            raise ValueError(f"evaluations leave frames uncovered: {sorted(shown - cited)}")

    return validate


def _polish_check(k: int):
    """Reject a verdict whose checklist indices are not 1..k, each once."""

    def validate(data: dict) -> None:
        indices = sorted(item["index"] for item in data["checklist"])
        if indices != list(range(1, k + 1)):
            raise ValueError(f"checklist indices {indices}, expected 1..{k} each once")

    return validate


def _span(frames: Sequence[Frame]) -> dict:
    return {"frames": [f.index for f in frames], "times": [round(f.time, 3) for f in frames]}


class _Judgement:
    """One video's judgement: its calls, their costs and the documents built so far."""

    def __init__(self, client: VLMClient, instance: Mapping, video: Path, protocol: Protocol):
        self.client, self.instance, self.video, self.p = client, instance, Path(video), protocol
        self.goal, self.checklist = instance["goal"], list(instance["checklist"])
        self.counts = Counter(calls=0, cached_calls=0)
        self.tokens: Counter = Counter()
        self.errors: dict[str, list[str]] = {"completeness": [], "rubric": []}
        self.completeness: dict = {"fps": protocol.completeness_fps}
        self.rubric: dict = {"windows": [], "round2_intervals": [], "polish": None}

    async def ask(self, doc: str, what: str, request: Request, validate=None) -> dict:
        """One call; a failure is recorded against document `doc` and raised again."""
        try:
            reply = await self.client.ask(request, validate)
        except JudgeCallError as err:
            self.counts["calls"] += 1
            self.errors[doc].append(f"{what}: {err.reason}")
            raise
        self.counts["cached_calls" if reply.cached else "calls"] += 1
        self.tokens.update(reply.usage)
        return reply.data

    async def sample(self, fps: float, start: float = 0.0, end: float | None = None):
        long_side = self.p.frame_long_side
        return await asyncio.to_thread(sample_frames, self.video, fps, start, end, long_side)

    async def references(self) -> tuple:
        """The input image and ground truth parts every frame call starts with."""

        def encode(path):
            return path and encode_image(path, self.p.image_long_side)

        image, gt_image = await asyncio.gather(
            asyncio.to_thread(encode, self.instance["image"]),
            asyncio.to_thread(encode, self.instance.get("gt_image")),
        )
        return prompts.references(image, gt_image, self.instance.get("gt_text"))

    async def judge_completeness(self, refs: tuple) -> None:
        fps = self.p.completeness_fps
        frames = await self.sample(fps)
        self.completeness.update(_span(frames))
        parts = prompts.completeness(refs, frames, self.goal, self.instance["tier_standard"], fps)
        request = Request("completeness", parts, schemas.COMPLETENESS, prompts.SYSTEM)
        self.completeness.update(await self.ask("completeness", "completeness", request))

    async def judge_window(self, refs: tuple, doc: dict, frames: list[Frame], sampling: str):
        """One window call; its comments and kept nominations go into `doc`."""
        parts = prompts.window(refs, frames, self.goal, self.checklist, doc["round"], sampling)
        request = Request("window", parts, schemas.WINDOW, prompts.SYSTEM)
        what = f"rubric round {doc['round']} window {doc['window'] + 1}"
        try:
            data = await self.ask("rubric", what, request, _window_check(frames))
        except JudgeCallError as err:
            doc["error"] = err.reason
            raise
        shown = set(doc["frames"])
        nominated = {i for i in data["frames_to_inspect_closely"] if i in shown}
        doc.update(data, nominated=sorted(nominated))

    async def judge_round(self, refs: tuple, round_: int, chunks, sampling: str) -> list[dict]:
        """The window calls of one round, run together; returns their documents."""
        docs = [{"round": round_, "window": k, **_span(c)} for k, c in enumerate(chunks)]
        self.rubric["windows"] += docs
        results = await asyncio.gather(
            *(
                self.judge_window(refs, doc, c, sampling)
                for doc, c in zip(docs, chunks, strict=True)
            ),
            return_exceptions=True,
        )
        for result in results:
            if isinstance(result, BaseException):
                raise result
        return docs

    async def judge_rubric(self, refs: tuple) -> None:
        p = self.p
        frames = await self.sample(p.round1_fps)
        chunks = windows(frames, p.window, p.overlap)
        first = await self.judge_round(refs, 1, chunks, f"sampled at {p.round1_fps:g} fps")
        time_of = {f.index: f.time for f in frames}
        nominated = [time_of[i] for doc in first for i in doc["nominated"]]
        end = await asyncio.to_thread(video_duration, self.video)
        spans = intervals(nominated, p.radius, end)
        self.rubric["round2_intervals"] = [[round(a, 3), round(b, 3)] for a, b in spans]
        chunks = []
        for start, stop in spans:
            chunks += windows(await self.sample(p.round2_fps, start, stop), p.window, p.overlap)
        sampling = f"re-sampled at {p.round2_fps:g} fps around frames flagged in round 1"
        second = await self.judge_round(refs, 2, chunks, sampling)

        k = len(self.checklist)
        rounds = (
            f"Round 1 saw the whole clip at {p.round1_fps:g} fps; round 2 re-inspected "
            f"flagged moments at {p.round2_fps:g} fps."
        )
        parts = prompts.polish(self.goal, self.checklist, first + second, rounds)
        request = Request("polish", parts, schemas.polish(k), prompts.SYSTEM)
        verdict = await self.ask("rubric", "rubric verdict", request, _polish_check(k))
        verdict["checklist"].sort(key=lambda item: item["index"])
        self.rubric["polish"] = verdict
        self.rubric["violations"] = [item["n_violations"] for item in verdict["checklist"]]

    def documents(self) -> dict:
        """completeness.json, rubric.json and score.json as they stand.

        `calls` counts the calls sent (failed ones included), `cached_calls` the cache
        hits; `tokens` sums the usage of every reply, cached ones included (the
        judgement's cost, whoever paid it).
        """

        def status(errors: list[str]) -> dict:
            return {"status": "error", "reason": "; ".join(errors)} if errors else {"status": "ok"}

        errors = self.errors["completeness"] + self.errors["rubric"]
        if errors:
            keys = ("tier", "completeness", "violations", "rubric", "final", "strict_success")
            score = dict.fromkeys(keys)
        else:
            score = scores(self.completeness["tier"], self.rubric["violations"])
        return {
            "completeness": {**status(self.errors["completeness"]), **self.completeness},
            "rubric": {**status(self.errors["rubric"]), **self.rubric},
            "score": {**status(errors), **score, **self.counts, "tokens": dict(self.tokens)},
        }


DEFAULT = Protocol()


async def judge_video(
    client: VLMClient, instance: Mapping, video: Path, protocol: Protocol = DEFAULT
) -> dict:
    """Judge one video of one instance (a row of the instance table, as a dict).

    Returns `{"completeness", "rubric", "score"}`, the documents to write. Completeness
    and the rubric run concurrently, the windows of a round together (the client caps
    concurrency).
    """
    judgement = _Judgement(client, instance, video, protocol)
    refs = await judgement.references()
    results = await asyncio.gather(
        judgement.judge_completeness(refs), judgement.judge_rubric(refs), return_exceptions=True
    )
    for result in results:
        if isinstance(result, BaseException) and not isinstance(result, JudgeCallError):
            raise result
    return judgement.documents()
