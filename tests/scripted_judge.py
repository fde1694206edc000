"""A scripted VLM judge for FakeVLM: answers each protocol call by its kind."""

from __future__ import annotations

import hashlib
import re

from tests.fake_vlm import Received

FRAME = re.compile(r"frame (\d+), t=([\d.]+) s")
STEP_FRAME = re.compile(r"step (\d+), frame (\d+), t=([\d.]+) s")


def kind(received: Received) -> str:
    """completeness | window1 | window2 | polish | transition, from the instruction's heading."""
    heading = received.texts[-1].splitlines()[0]
    if heading.startswith("# Rubric window"):
        return "window" + heading.split()[-1]
    return {
        "# Completeness": "completeness",
        "# Rubric verdict": "polish",
        "# Checkpoint transition": "transition",
    }[heading]


def frames_of(received: Received) -> list[tuple[int, float]]:
    return [(int(m[1]), float(m[2])) for t in received.texts if (m := FRAME.fullmatch(t))]


class Judge:
    """A scripted judge: tier and violation counts to give, frames to nominate in round 1.

    `violations` is repeated or cut to the checklist length K the verdict call asks for.

    `bad_polish` lists faulty verdicts to give first, in order: `short` (one entry
    missing) or `repeated` (index 1 every time); a window whose first frame is in
    `bad_windows` leaves its first frame without a comment.
    """

    def __init__(self, tier, violations, nominate=(), bad_polish=(), bad_windows=()):
        self.tier, self.violations, self.nominate = tier, violations, list(nominate)
        self.bad_polish, self.bad_windows = list(bad_polish), set(bad_windows)

    def __call__(self, received: Received) -> dict:
        what = kind(received)
        if what == "completeness":
            return {"tier": self.tier, "reasoning": "scripted"}
        if what.startswith("window"):
            shown = [index for index, _ in frames_of(received)]
            seen = hashlib.sha256(received.images[0]).hexdigest()[:8]  # the instance's image
            cited = shown[1:] if shown[0] in self.bad_windows else shown
            return {
                "evaluations": [{"frame_indices": cited, "comment": f"scripted {what} of {seen}"}],
                "frames_to_inspect_closely": self.nominate if what == "window1" else [],
            }
        k = received.schema["properties"]["checklist"]["minItems"]
        counts = (list(self.violations) * k)[:k]
        items = [
            {"index": n, "n_violations": x, "evidence": "scripted"} for n, x in enumerate(counts, 1)
        ]
        fault = self.bad_polish.pop(0) if self.bad_polish else None
        if fault == "short":
            items = items[:-1]
        elif fault == "repeated":
            items = [items[0]] * len(items)
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
