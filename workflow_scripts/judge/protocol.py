"""The judge protocol of DESIGN ("Judge protocol"): completeness, rubric, final score.

With `Protocol`'s defaults: completeness sends the whole clip at 2 fps in one call
(tier 0/1/2 -> 0/0.5/1). The rubric runs coarse to fine: round 1 cuts the clip sampled
at 4 fps into windows of 10 frames, consecutive windows sharing one frame (window k
holds sampled frames [9k, 9k + 10); the last window is shorter but keeps at least 2
frames, since a lone frame is already the previous window's last); round 2 re-samples
at 8 fps the intervals of +-0.5 s around every frame round 1 nominated (merged where
they overlap, clipped to the clip), windowed the same way per interval.

Replies are taken as the official judge takes them (`take_window`, `take_verdict`): a
cited or nominated index not among the window's frames is dropped, frames without a
comment are accepted, a window keeps at most ceil(n / 2) nominations of its n frames,
each adjustment counted; round-2 nominations are recorded, not followed. Only a reply
that does not match its schema is retried (by the client). One text-only call then
turns all comments into de-duplicated violation counts x_i per checklist item; an item
the verdict leaves out is asked once more, then counted x_i = 1 and listed as imputed.
rubric = mean_i 1 / (x_i + 1), final = completeness x rubric, strict success = tier 2
and every x_i = 0. The words are the templates of `judge.templates`.

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
from workflow_scripts.judge.settings import JUDGE_CALLS, Protocol
from workflow_scripts.judge.templates import load_templates


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


SCORE_KEYS = ("tier", "completeness", "violations", "rubric", "final", "strict_success")


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


def take_window(data: dict, shown: Sequence[int]) -> dict:
    """A window reply taken as the official judge takes it, with what was adjusted.

    Cited indices not shown are dropped (`dropped_citations`); frames no evaluation
    covers are accepted (`uncovered`); of the nominations, shown frames are kept in reply
    order, distinct, up to ceil(n / 2) for n frames shown (`nominated`), those not shown
    are dropped citations and those over the cap `dropped_nominations`.
    """
    visible, dropped = set(shown), []
    evaluations = []
    for evaluation in data["evaluations"]:
        cited = evaluation["frame_indices"]
        dropped += [i for i in cited if i not in visible]
        evaluations.append({**evaluation, "frame_indices": [i for i in cited if i in visible]})
    covered = {i for evaluation in evaluations for i in evaluation["frame_indices"]}
    nominations = list(dict.fromkeys(data["frames_to_inspect_closely"]))
    dropped += [i for i in nominations if i not in visible]
    valid = [i for i in nominations if i in visible]
    cap = prompts.nomination_cap(len(shown))
    return {
        **data,
        "evaluations": evaluations,
        "nominated": sorted(valid[:cap]),
        "dropped_citations": dropped,
        "dropped_nominations": valid[cap:],
        "uncovered": [i for i in shown if i not in covered],
    }


def take_verdict(data: dict, k: int) -> tuple[list[dict], list[int]]:
    """The verdict's checklist entries by index 1..k (the first of repeats) and the
    indices it left out."""
    entries: dict[int, dict] = {}
    for item in data["checklist"]:
        entries.setdefault(item["index"], item)
    missing = [n for n in range(1, k + 1) if n not in entries]
    return [entries[n] for n in sorted(entries)], missing


def _span(frames: Sequence[Frame]) -> dict:
    return {"frames": [f.index for f in frames], "times": [round(f.time, 3) for f in frames]}


class _Judgement:
    """One video's judgement: its calls, their costs and the documents built so far."""

    def __init__(self, client, instance: Mapping, video: Path, protocol: Protocol, templates):
        self.client, self.instance, self.video, self.p = client, instance, Path(video), protocol
        self.templates = templates
        self.checklist = list(instance["checklist"])
        self.counts = Counter(calls=0, cached_calls=0)
        self.tokens: Counter = Counter()
        self.versions: set[str] = set()
        self.errors: dict[str, list[str]] = {"completeness": [], "rubric": []}
        self.completeness: dict = {"fps": protocol.completeness_fps}
        self.rubric: dict = {"windows": [], "round2_intervals": [], "polish": None}

    async def ask(self, doc: str, what: str, request: Request) -> dict:
        """One call; a failure is recorded against document `doc` and raised again."""
        try:
            reply = await self.client.ask(request)
        except JudgeCallError as err:
            self.counts["calls"] += 1
            self.errors[doc].append(f"{what}: {err.reason}")
            raise
        self.counts["cached_calls" if reply.cached else "calls"] += 1
        self.tokens.update(reply.usage)
        if reply.model_version:
            self.versions.add(reply.model_version)
        return reply.data

    def request(self, kind: str, parts: tuple, schema: dict, system: str) -> Request:
        return Request(kind, parts, schema, self.templates[system])

    async def sample(self, fps: float, start: float = 0.0, end: float | None = None):
        long_side = self.p.frame_long_side
        return await asyncio.to_thread(sample_frames, self.video, fps, start, end, long_side)

    async def references(self) -> tuple:
        """The input image and ground truth parts every frame call shows."""

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
        parts = prompts.completeness(self.templates, refs, frames, self.instance, fps)
        request = self.request("completeness", parts, schemas.COMPLETENESS, SYSTEM["completeness"])
        self.completeness.update(await self.ask("completeness", "completeness", request))

    async def judge_window(self, refs: tuple, doc: dict, frames: list[Frame], place, sampling):
        """One window call; its comments, kept nominations and adjustments go into `doc`."""
        parts = prompts.window(self.templates, refs, frames, self.instance, place, sampling)
        request = self.request("window", parts, schemas.WINDOW, SYSTEM["window"])
        what = f"rubric round {doc['round']} window {doc['window'] + 1}"
        try:
            data = await self.ask("rubric", what, request)
        except JudgeCallError as err:
            doc["error"] = err.reason
            raise
        doc.update(take_window(data, doc["frames"]))

    async def judge_round(self, refs: tuple, round_: int, chunks, sampling: str) -> list[dict]:
        """The window calls of one round, run together; returns their documents."""
        docs = [{"round": round_, "window": k, **_span(c)} for k, c in enumerate(chunks)]
        self.rubric["windows"] += docs
        n = len(chunks)
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

    async def judge_verdict(self, windows: list[dict]) -> None:
        """The verdict; a reply leaving out items is asked once more, then they count 1."""
        p, k = self.p, len(self.checklist)
        rounds = (
            f"Round 1 saw the whole clip at {p.round1_fps:g} fps; round 2 took a closer look "
            f"at {p.round2_fps:g} fps around the frames round 1 nominated."
        )
        parts = prompts.verdict(self.templates, self.instance, windows, rounds)
        schema = schemas.polish(k)
        request = self.request("polish", parts, schema, SYSTEM["verdict"])
        verdict = await self.ask("rubric", "rubric verdict", request)
        entries, missing = take_verdict(verdict, k)
        if missing:
            retry = (*parts, prompts.verdict_retry(self.templates, missing, k))
            request = self.request("polish", retry, schema, SYSTEM["verdict"])
            verdict = await self.ask("rubric", "rubric verdict (asked again)", request)
            entries, missing = take_verdict(verdict, k)
        imputed = {n: {"index": n, "n_violations": 1, "evidence": "imputed"} for n in missing}
        verdict["checklist"] = sorted([*entries, *imputed.values()], key=lambda e: e["index"])
        self.rubric["polish"] = {**verdict, "imputed": missing}
        self.rubric["violations"] = [item["n_violations"] for item in verdict["checklist"]]

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
        sampling = f"re-sampled at {p.round2_fps:g} fps around frames nominated in round 1"
        second = await self.judge_round(refs, 2, chunks, sampling)
        await self.judge_verdict(first + second)

    def documents(self) -> dict:
        """completeness.json, rubric.json and score.json as they stand.

        `calls` counts the calls sent (failed ones included), `cached_calls` the cache
        hits; `tokens` sums the usage of every reply, cached ones included (the
        judgement's cost, whoever paid it). The adjustments made to replies are counted:
        `dropped_citations`, `dropped_nominations`, `uncovered_frames` (over all windows)
        and `imputed_items` (checklist items counted 1 because the verdict left them out).
        `model_version` is the version the backend reported for its replies.
        """

        def status(errors: list[str]) -> dict:
            return {"status": "error", "reason": "; ".join(errors)} if errors else {"status": "ok"}

        errors = self.errors["completeness"] + self.errors["rubric"]
        if errors:
            score = dict.fromkeys(SCORE_KEYS)
        else:
            score = scores(self.completeness["tier"], self.rubric["violations"])
        taken = [doc for doc in self.rubric["windows"] if "uncovered" in doc]
        adjusted = {
            name: sum(len(doc[key]) for doc in taken)
            for name, key in (
                ("dropped_citations", "dropped_citations"),
                ("dropped_nominations", "dropped_nominations"),
                ("uncovered_frames", "uncovered"),
            )
        }
        polish = self.rubric["polish"]
        adjusted["imputed_items"] = polish["imputed"] if polish else []
        return {
            "completeness": {**status(self.errors["completeness"]), **self.completeness},
            "rubric": {**status(self.errors["rubric"]), **self.rubric},
            "score": {
                **status(errors),
                **score,
                **adjusted,
                **self.counts,
                "tokens": dict(self.tokens),
                "model_version": ", ".join(sorted(self.versions)) or None,
            },
        }


DEFAULT = Protocol()
SYSTEM = {
    "completeness": "completeness_system.txt",
    "window": "window_system.txt",
    "verdict": "verdict_system.txt",
}


async def judge_video(
    client: VLMClient,
    instance: Mapping,
    video: Path,
    protocol: Protocol = DEFAULT,
    templates: Mapping[str, str] | None = None,
) -> dict:
    """Judge one video of one instance.

    `instance` holds what `settings.instance_params` gives (id, task, level, texts,
    the `image` and `gt_image` paths); `templates` the prompt templates by
    file name (None: the defaults). Returns `{"completeness", "rubric", "score"}`, the
    documents to write. Completeness and the rubric run concurrently, the windows of a
    round together (the client caps concurrency).
    """
    templates = templates or load_templates(None, JUDGE_CALLS)
    judgement = _Judgement(client, instance, video, protocol, templates)
    refs = await judgement.references()
    results = await asyncio.gather(
        judgement.judge_completeness(refs), judgement.judge_rubric(refs), return_exceptions=True
    )
    for result in results:
        if isinstance(result, BaseException) and not isinstance(result, JudgeCallError):
            raise result
    return judgement.documents()
