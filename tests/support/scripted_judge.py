"""A scripted VLM judge for FakeVLM: answers each protocol call by its kind."""

from __future__ import annotations

import hashlib
import io
import re

import numpy as np
from PIL import Image

from tests.support.fake_vlm import Received

FRAME = re.compile(r"frame (\d+), t=([\d.]+) s")
STEP_FRAME = re.compile(r"step (\d+), frame (\d+), t=([\d.]+) s")


ROUND = re.compile(r"\bround (\d)\b", re.IGNORECASE)


def kind(received: Received) -> str:
    """completeness | window1 | window2 | polish | transition, from the reply schema asked
    for (a window's round from the first `round N` of its texts)."""
    fields = received.schema["properties"]
    if "evaluations" in fields:
        return "window" + next(m[1] for t in received.texts if (m := ROUND.search(t)))
    return next(name for key, name in KINDS.items() if key in fields)


KINDS = {"tier": "completeness", "checklist": "polish", "label": "transition"}


def frames_of(received: Received) -> list[tuple[int, float]]:
    return [(int(m[1]), float(m[2])) for t in received.texts if (m := FRAME.fullmatch(t))]


CHECKLIST = re.compile(r"## Checklist\n(.*?)\n\n", re.S)


def checklist_length(received: Received) -> int:
    """K, the number of checklist items a verdict request lists."""
    listed = CHECKLIST.search(received.texts[0])[1]
    return len(re.findall(r"^\d+\. ", listed, re.M))


class Judge:
    """A scripted judge: tier and violation counts to give, frames to nominate in round 1.

    `violations` is repeated or cut to the checklist length K the verdict call asks for.

    `bad_polish` lists faulty verdicts to give first, in order: `short` (the last entry
    missing), `repeated` (index 1 every time), `unparsable` (an index outside 1..K),
    `negative` (item 1 counts -2), or any other value: given as the reply as it is (a
    dict, or a str sent as the reply text). `loose`: like a real VLM that cites loosely,
    every window reply leaves the window's first frame without a comment and cites one
    frame not shown (the one after its last). `nominate` may be `"all"`: every frame shown.
    """

    def __init__(self, tier, violations, nominate=(), bad_polish=(), loose=False):
        self.tier, self.violations, self.nominate = tier, violations, nominate
        self.bad_polish, self.loose = list(bad_polish), loose

    def __call__(self, received: Received) -> dict:
        what = kind(received)
        if what == "completeness":
            return {"tier": self.tier, "reasoning": "scripted"}
        if what.startswith("window"):
            shown = [index for index, _ in frames_of(received)]
            seen = hashlib.sha256(received.images[0]).hexdigest()[:8]  # the instance's image
            cited = [*shown[1:], shown[-1] + 1] if self.loose else shown
            nominate = shown if self.nominate == "all" else list(self.nominate)
            return {
                "evaluations": [{"frame_indices": cited, "comment": f"scripted {what} of {seen}"}],
                "frames_to_inspect_closely": nominate if what == "window1" else [],
            }
        k = checklist_length(received)
        counts = (list(self.violations) * k)[:k]
        items = [
            {"index": n, "n_violations": x, "evidence": "scripted"} for n, x in enumerate(counts, 1)
        ]
        fault = self.bad_polish.pop(0) if self.bad_polish else None
        if fault == "short":
            items = items[:-1]
        elif fault == "repeated":
            items = [items[0]] * len(items)
        elif fault == "unparsable":
            items[0] = {**items[0], "index": k + 1}
        elif fault == "negative":
            items[0] = {**items[0], "n_violations": -2}
        elif fault is not None:
            return fault
        return {"by_range": [], "checklist": items, "overall_reasoning": "scripted"}


def checkpoint_frames(received: Received) -> list[tuple[int, int, float]]:
    """(step, frame index, time) of each checkpoint frame a transition call shows, in order."""
    return [
        (int(m[1]), int(m[2]), float(m[3]))
        for t in received.texts
        if (m := STEP_FRAME.fullmatch(t))
    ]


class Transitioner:
    """A scripted transition labeller: `labels` by (from, to) step pair, else `stable`.

    A pair in `fail` gets a label outside the schema every time (so the call fails after
    its retries); calls of other kinds go to `other` (e.g. a `Judge`).
    """

    def __init__(self, labels=None, fail=(), other=None):
        self.labels, self.fail, self.other = dict(labels or {}), set(fail), other

    def __call__(self, received: Received) -> dict:
        if kind(received) != "transition":
            return self.other(received)
        steps = list(dict.fromkeys(step for step, _, _ in checkpoint_frames(received)))
        pair = (steps[0], steps[-1])
        label = "not a label" if pair in self.fail else self.labels.get(pair, "stable")
        return {
            "label": label,
            "earlier_state": f"state at step {pair[0]}",
            "later_state": f"state at step {pair[1]}",
            "evidence": f"scripted {pair[0]}->{pair[1]}",
        }


class ImageJudge:
    """The image judge's calls (its reply schema has `success`): success where the generated
    image, the request's last, is bright (mean grey above 128), with its reasoning; every
    other call goes to `other`."""

    def __init__(self, other=None):
        self.other = other

    def __call__(self, received: Received) -> dict:
        if "success" not in received.schema["properties"]:
            return self.other(received)
        grey = np.asarray(Image.open(io.BytesIO(received.images[-1])).convert("L")).mean()
        ok = bool(grey > 128)
        reached = "goal state shown" if ok else "the goal is not reached"
        return {"success": ok, "reasoning": f"{reached}; the rest of the scene is unchanged"}
