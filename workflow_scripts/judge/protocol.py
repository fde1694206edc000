"""The judge protocol of DESIGN ("Judge protocol"): completeness, rubric, final score.

With `Protocol`'s defaults: completeness sends the whole clip at 2 fps in one call
(tier 0/1/2 -> 0/0.5/1). The rubric runs coarse to fine: round 1 cuts the clip sampled
at 4 fps into windows of 10 frames, consecutive windows sharing one frame (window k
holds sampled frames [9k, 9k + 10); the last window is shorter but keeps at least 2
frames, since a lone frame is already the previous window's last); round 2 re-samples
at 8 fps the intervals of +-0.5 s around every frame round 1 nominated (centred on the
time that frame was sampled for, merged where they overlap, clipped to the clip),
windowed the same way per interval. `sampling: even` runs round 1 only, at `even_fps`;
`batching: all_at_once` makes round 1 one call over all its frames and round 2 one call
per interval. Frames are sampled by `frames.VideoFrames` under `protocol.frames`.

Replies are taken as the official judge takes them (`take_window`, `take_verdict`): a
cited or nominated index not among the window's frames is dropped, a comment left citing
no shown frame (or empty) is dropped from the verdict's input, frames without a comment
are accepted, a window keeps at most ceil(n / 2) nominations of its n frames; round-2
nominations are recorded, not followed. One text-only call then turns all comments into
de-duplicated violation counts x_i per checklist item. The `official` verdict rule: an
item left out counts x_i = 1, a repeated item keeps its last entry, an index outside
1..K is ignored, a negative count is 0, and a verdict that stays unusable counts every
item 1 (flagged). The `strict` rule asks once more for items left out (then counts them
1), keeps the first of repeats, and has bounds enforced by the schema (asked again).
Every adjustment is counted in the documents. rubric = mean_i 1 / (x_i + 1) (0 without a
checklist, as the official judge), final = completeness x rubric, strict success = tier
2 and every x_i = 0.

Failed calls (`failures`), after the client's retries: `official`, as the benchmark's
judge: a failed completeness call leaves completeness and final empty but keeps the
rubric; a failed window is flagged, listed without comments, and the instance still
scored (strict success unknown). `strict`: any failed call makes the instance `error`.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path

from workflow_scripts.judge import prompts, schemas
from workflow_scripts.judge.client import JudgeCallError, Request, VLMClient
from workflow_scripts.judge.frames import Frame, VideoFrames, encode_image, frame_at, samples
from workflow_scripts.judge.replies import (
    ADJUSTMENTS,
    SCORE_KEYS,
    scores,
    take_verdict,
    take_window,
)
from workflow_scripts.judge.settings import JUDGE_CALLS, Protocol
from workflow_scripts.judge.templates import load_templates


def windows(frames: Sequence[Frame], size: int, overlap: int) -> list[list[Frame]]:
    """Consecutive windows of `size` frames sharing `overlap`; none made only of shared ones."""
    step = size - overlap
    return [list(frames[i : i + size]) for i in range(0, max(len(frames) - overlap, 1), step)]


def intervals(times: Sequence[float], radius: float, end: float) -> list[tuple[float, float]]:
    """[t - radius, t + radius] around each time, clipped to [0, end], overlaps merged
    (and intervals less than 1 ms apart, as the official judge)."""
    merged: list[tuple[float, float]] = []
    for t in sorted(times):
        start, stop = max(t - radius, 0.0), min(t + radius, end)
        if merged and start <= merged[-1][1] + 1e-3:
            merged[-1] = (merged[-1][0], max(merged[-1][1], stop))
        else:
            merged.append((start, stop))
    return merged


def _span(frames: Sequence[Frame]) -> dict:
    return {"frames": [f.index for f in frames], "times": [round(f.time, 3) for f in frames]}


class _Judgement:
    """One video's judgement: its calls, their costs and the documents built so far."""

    def __init__(
        self, client, instance: Mapping, frames: VideoFrames, protocol: Protocol, templates,
        official=None,
    ):  # fmt: skip
        self.client, self.instance, self.p = client, instance, protocol
        self.templates = templates  # the strict verdict's re-ask line comes from them
        self.prompts = official or prompts.Templates(templates)  # each call's request
        self.frames = frames  # each frame decoded once
        self.checklist = list(instance["checklist"])
        self.counts = Counter(calls=0, cached_calls=0)
        self.tokens: Counter = Counter()
        self.versions: set[str] = set()
        self.errors: dict[str, list[str]] = {"completeness": [], "rubric": []}
        self.flags: list[str] = []  # failed calls the official rules score around
        self.answered = 0  # calls that got a usable reply (cache hits included)
        self.completeness: dict = {"fps": protocol.completeness_fps}
        self.rubric: dict = {"windows": [], "round2_intervals": [], "polish": None}
        self.shown: list[list[Frame]] = []  # each window's frames, as rubric["windows"]

    async def ask(self, what: str, request: Request) -> dict:
        """One call; every attempt it sent and every reply's tokens are counted."""
        try:
            reply = await self.client.ask(request)
        except JudgeCallError as err:
            self.counts["calls"] += err.attempts
            self.tokens.update(err.usage)
            raise
        self.answered += 1
        if reply.cached:
            self.counts["cached_calls"] += 1
        else:
            self.counts["calls"] += reply.attempts
        self.tokens.update(reply.usage)
        if reply.model_version:
            self.versions.add(reply.model_version)
        return reply.data

    def failed(self, doc: str, what: str, err: JudgeCallError, official: bool) -> None:
        """A failed call: flagged where the official rule scores around it, else an error."""
        (self.flags if official else self.errors[doc]).append(f"{what}: {err.reason}")

    async def sample(self, fps: float, start: float = 0.0, end: float | None = None):
        return await asyncio.to_thread(self.frames.sample, fps, start, end, self.p.frames)

    async def references(self) -> dict[str, tuple]:
        """The input image and ground truth parts of each kind of frame call: completeness
        is shown every ground truth the instance has, the rubric windows only those the
        routing gives the task."""

        def encode(path):
            return path and encode_image(path, self.p.image_long_side)

        image, gt_image = await asyncio.gather(
            asyncio.to_thread(encode, self.instance["image"]),
            asyncio.to_thread(encode, self.instance.get("gt_image")),
        )
        gt_text, routing, task = self.instance.get("gt_text"), self.p.routing, self.instance["task"]
        window = (
            gt_image if task in routing["gt_image"] else None,
            gt_text if task in routing["gt_text"] else None,
        )
        shown = {"completeness": (gt_image, gt_text), "window": window}
        return {
            call: self.prompts.references(self.instance, image, *truth)
            for call, truth in shown.items()
        }

    async def judge_completeness(self, refs: dict) -> None:
        fps = self.p.completeness_fps
        frames = await self.sample(fps)
        self.completeness.update(_span(frames))
        system, parts = self.prompts.completeness(self.instance, refs["completeness"], frames, fps)
        request = Request("completeness", parts, schemas.COMPLETENESS, system)
        try:
            self.completeness.update(await self.ask("completeness", request))
        except JudgeCallError as err:
            self.completeness["error"] = err.reason
            self.failed("completeness", "completeness", err, self.p.failures == "official")

    async def judge_window(self, refs: dict, doc: dict, frames: list[Frame], place, sampling):
        """One window call; its comments, kept nominations and adjustments go into `doc`;
        `sampling`: (how the round sampled, its frame count, its fps)."""
        system, parts = self.prompts.window(self.instance, refs["window"], frames, place, *sampling)
        request = Request("window", parts, schemas.WINDOW, system)
        what = f"rubric round {doc['round']} window {doc['window'] + 1}"
        try:
            data = await self.ask(what, request)
        except JudgeCallError as err:
            doc.update(error=err.reason, evaluations=[], nominated=[])
            self.failed("rubric", what, err, self.p.failures == "official")
            if self.p.failures != "official":
                raise
            return
        doc.update(take_window(data, doc["frames"]))

    def chunks(self, frames: list[Frame]) -> list[list[Frame]]:
        """A pass's frames as its calls see them: windows, or all at once."""
        if not frames:
            return []
        if self.p.batching == "all_at_once":
            return [frames]
        return windows(frames, self.p.window, self.p.overlap)

    async def judge_round(self, refs: dict, round_: int, chunks, sampling: str, fps: float):
        """The window calls of one round at `fps`, run together; returns their documents."""
        docs = [{"round": round_, "window": k, **_span(c)} for k, c in enumerate(chunks)]
        self.rubric["windows"] += docs
        self.shown += chunks
        n, count = len(chunks), len({f.index for chunk in chunks for f in chunk})
        sampling = (sampling, count, fps)
        results = await asyncio.gather(
            *(
                self.judge_window(refs, doc, c, (round_, k + 1, n), sampling)
                for k, (doc, c) in enumerate(zip(docs, chunks, strict=True))
            ),
            return_exceptions=True,
        )
        for result in results:
            if isinstance(result, BaseException):
                raise result
        return docs

    async def judge_verdict(self, refs: dict, windows: list[dict], rounds: str) -> None:
        """The verdict (`verdict` rule: module docstring)."""
        k, strict = len(self.checklist), self.p.verdict == "strict"
        fps = {1: self.p.even_fps if self.p.sampling == "even" else self.p.round1_fps}
        fps[2] = self.p.round2_fps
        clip = await asyncio.to_thread(self.frames.clip)
        shown = (self.instance, windows, self.shown, fps, clip, refs["window"], rounds)
        system, parts = self.prompts.verdict(*shown)
        schema = schemas.polish(k, strict)
        request = Request("polish", parts, schema, system, list_key="checklist")
        try:
            verdict = await self.ask("rubric verdict", request)
            taken = take_verdict(verdict, k, self.p.verdict)
            if strict and taken["imputed_items"]:
                retry = (*parts, prompts.verdict_retry(self.templates, taken["imputed_items"], k))
                request = Request("polish", retry, schema, system)
                verdict = await self.ask("rubric verdict (asked again)", request)
                taken = take_verdict(verdict, k, self.p.verdict)
        except JudgeCallError as err:
            self.failed("rubric", "rubric verdict", err, not strict)
            if strict:
                raise
            verdict, taken = {"error": err.reason}, take_verdict({}, k)
        self.rubric["polish"] = {**verdict, **taken}
        self.rubric["violations"] = taken["violations"]

    async def judge_rubric(self, refs: dict) -> None:
        p = self.p
        if not self.checklist:  # the official judge scores no checklist 0, whatever it sees
            if p.verdict == "strict":
                self.errors["rubric"].append("no checklist: the rubric entry has no rubric list")
            self.rubric["violations"] = []
            return
        first_fps = p.even_fps if p.sampling == "even" else p.round1_fps
        frames = await self.sample(first_fps)
        sampled = f"sampled at {first_fps:g} fps"
        first = await self.judge_round(refs, 1, self.chunks(frames), sampled, first_fps)
        if p.sampling == "even":
            rounds = f"One pass saw the whole clip at {first_fps:g} fps."
            await self.judge_verdict(refs, first, rounds)
            return
        time_of = {f.index: f.asked if p.frames == "official" else f.time for f in frames}
        nominated = [time_of[i] for doc in first for i in doc["nominated"]]
        spans = round2_spans(nominated, *await asyncio.to_thread(self.frames.clip), p)
        self.rubric["round2_intervals"] = [[round(a, 3), round(b, 3)] for a, b in spans]
        chunks = []
        for start, stop in spans:
            chunks += self.chunks(await self.sample(p.round2_fps, start, stop))
        sampling = f"re-sampled at {p.round2_fps:g} fps around frames nominated in round 1"
        second = await self.judge_round(refs, 2, chunks, sampling, p.round2_fps)
        rounds = (
            f"Round 1 saw the whole clip at {p.round1_fps:g} fps; round 2 took a closer look "
            f"at {p.round2_fps:g} fps around the frames round 1 nominated."
        )
        await self.judge_verdict(refs, first + second, rounds)

    def documents(self) -> dict:
        """completeness.json, rubric.json and score.json as they stand.

        `calls` counts the requests sent (every attempt, failed ones included),
        `cached_calls` the cache hits; `tokens` sums the usage of every reply, cached
        ones included (the judgement's cost, whoever paid it). The adjustments made to
        replies are counted: `dropped_citations`, `dropped_comments`,
        `dropped_nominations`, `uncovered_frames` (over all windows) and the verdict's
        `imputed_items`, `repeated_items`, `ignored_items`, `clamped_items` (module
        docstring). `flags` lists the failed calls the official rules scored around.
        `model_version` is the version the backend reported for its replies.
        """

        def status(errors: list[str]) -> dict:
            return {"status": "error", "reason": "; ".join(errors)} if errors else {"status": "ok"}

        errors = self.errors["completeness"] + self.errors["rubric"]
        if self.flags and not self.answered:  # nothing the official rules could score around
            errors = [*errors, f"every call failed ({'; '.join(self.flags)})"]
        if errors or "violations" not in self.rubric:
            score = dict.fromkeys(SCORE_KEYS)
        else:
            score = scores(self.completeness.get("tier"), self.rubric["violations"])
            if any("error" in doc for doc in self.rubric["windows"]):
                score["strict_success"] = None  # as the official judge: success unknown
        taken = [doc for doc in self.rubric["windows"] if "uncovered" in doc]
        adjusted = {
            name: sum(len(doc[key]) for doc in taken)
            for name, key in (
                ("dropped_citations", "dropped_citations"),
                ("dropped_comments", "dropped_comments"),
                ("dropped_nominations", "dropped_nominations"),
                ("uncovered_frames", "uncovered"),
            )
        }
        polish = self.rubric["polish"] or {}
        adjusted.update({key: polish.get(key, []) for key in ADJUSTMENTS})
        completeness_status = status(self.errors["completeness"])
        if "error" in self.completeness and not self.errors["completeness"]:
            completeness_status = status([self.completeness["error"]])
        return {
            "completeness": {**completeness_status, **self.completeness},
            "rubric": {**status(self.errors["rubric"]), **self.rubric, "flags": self.flags},
            "score": {
                **status(errors),
                **score,
                **adjusted,
                "flags": self.flags,
                **self.counts,
                "tokens": dict(self.tokens),
                "model_version": ", ".join(sorted(self.versions)) or None,
            },
        }


def round2_spans(times: Sequence[float], count: int, rate: float, p: Protocol) -> list:
    """Round 2's intervals around the nominated `times` in a clip of `count` frames at
    `rate` fps (the official rule clips them at the last frame's time)."""
    end = count / rate - (1 / rate if p.frames == "official" else 0.0)
    return intervals(times, p.radius, max(0.0, end))


def reachable_frames(count: int, rate: float, p: Protocol) -> list[int]:
    """Every frame the judge can ask of a clip of `count` frames at `rate` fps under `p`:
    completeness's, round 1's, and round 2's around any frames round 1 may nominate (a
    merged interval runs from one time's start to a later time's end, so each start
    sampled up to the latest end, plus each end, holds every interval's frames)."""
    first_fps = p.even_fps if p.sampling == "even" else p.round1_fps
    first = samples(count, rate, first_fps, rule=p.frames)
    chosen = {i for i, _ in samples(count, rate, p.completeness_fps, rule=p.frames)}
    chosen |= {i for i, _ in first}
    if p.sampling == "even":
        return sorted(chosen)
    times = [asked if p.frames == "official" else i / rate for i, asked in first]
    spans = [round2_spans([t], count, rate, p)[0] for t in times]
    latest = max(stop for _, stop in spans)
    for start, stop in spans:
        chosen |= {i for i, _ in samples(count, rate, p.round2_fps, start, latest, p.frames)}
        if p.frames == "official" and (index := frame_at(stop, count, rate)) is not None:
            chosen.add(index)
    return sorted(chosen)


DEFAULT = Protocol()


async def judge_video(
    client: VLMClient,
    instance: Mapping,
    video: Path,
    protocol: Protocol = DEFAULT,
    templates: Mapping[str, str] | None = None,
    store: Path | None = None,
    official=None,
) -> dict:
    """Judge one video of one instance.

    `instance` holds what `settings.instance_params` gives (id, task, level, texts,
    the `image` and `gt_image` paths); `templates` the prompt templates by
    file name (None: the defaults); `official` the official judge's prompts
    (`official.OfficialPrompts`) in their place, if any; `store` the video's prepared
    frames, if any (`frames.VideoFrames`). Returns `{"completeness", "rubric", "score"}`, the
    documents to write. Completeness and the rubric run concurrently, the windows of a
    round together (the client caps concurrency). A call that fails is an error or is
    scored around (`protocol.failures`, `protocol.verdict`); a failure of the service
    (ServiceError) is raised.
    """
    templates = templates or load_templates(None, JUDGE_CALLS)
    frames = VideoFrames(video, protocol.frame_long_side, store)
    judgement = _Judgement(client, instance, frames, protocol, templates, official)
    refs = await judgement.references()
    results = await asyncio.gather(
        judgement.judge_completeness(refs), judgement.judge_rubric(refs), return_exceptions=True
    )
    for result in results:
        if isinstance(result, BaseException) and not isinstance(result, JudgeCallError):
            raise result
    return judgement.documents()
