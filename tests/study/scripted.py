"""A scripted judge for the plan's tests: one nominated moment per round-1 call."""

from __future__ import annotations

from tests.support.scripted_judge import Judge, frames_of, kind


class OnePerWindow(Judge):
    """A scripted judge nominating one frame per round-1 call (the middle one it is shown),
    the plan's assumption for round 2."""

    def __call__(self, received):
        reply = super().__call__(received)
        if kind(received) == "window1":
            shown = [index for index, _ in frames_of(received)]
            reply["frames_to_inspect_closely"] = [shown[len(shown) // 2]]
        return reply
