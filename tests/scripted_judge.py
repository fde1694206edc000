"""A scripted VLM judge for FakeVLM: answers each protocol call by its kind."""

from __future__ import annotations

import re

from tests.fake_vlm import Received

FRAME = re.compile(r"frame (\d+), t=([\d.]+) s")


def kind(received: Received) -> str:
    """completeness | window1 | window2 | polish, from the instruction's heading."""
    heading = received.texts[-1].splitlines()[0]
    if heading.startswith("# Rubric window"):
        return "window" + heading.split()[-1]
    return {"# Completeness": "completeness", "# Rubric verdict": "polish"}[heading]


def frames_of(received: Received) -> list[tuple[int, float]]:
    return [(int(m[1]), float(m[2])) for t in received.texts if (m := FRAME.fullmatch(t))]


class Judge:
    """A scripted judge: tier and violation counts to give, frames to nominate in round 1.

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
            cited = shown[1:] if shown[0] in self.bad_windows else shown
            return {
                "evaluations": [{"frame_indices": cited, "comment": f"scripted {what}"}],
                "frames_to_inspect_closely": self.nominate if what == "window1" else [],
            }
        items = [
            {"index": n, "n_violations": x, "evidence": "scripted"}
            for n, x in enumerate(self.violations, 1)
        ]
        fault = self.bad_polish.pop(0) if self.bad_polish else None
        if fault == "short":
            items = items[:-1]
        elif fault == "repeated":
            items = [items[0]] * len(items)
        return {"by_range": [], "checklist": items, "overall_reasoning": "scripted"}
