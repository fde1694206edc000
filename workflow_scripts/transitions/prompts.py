"""The transition call's prompt (template `transition.txt`): one checkpoint pair of one video.

`$references` holds the input image and the instance's ground truth
(`prompts.references`); `$frames` the earlier checkpoint's frames and the later one's,
each checkpoint after a `Checkpoint after denoising step S:` line and each frame after
a line such as `step 4, frame 37, t=2.31 s`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from workflow_scripts.judge.client import Part
from workflow_scripts.judge.frames import Frame
from workflow_scripts.judge.prompts import checklist_text, frame_parts, render


def checkpoint(step: int, frames: Sequence[Frame]) -> list[Part]:
    """A checkpoint's frames, each after its `step S, frame I, t=T s` line."""
    heading = Part.of_text(f"Checkpoint after denoising step {step}:")
    return [heading, *frame_parts(frames, f"step {step}, ")]


def transition(
    templates: Mapping[str, str],
    refs: tuple[Part, ...],
    earlier: tuple[int, Sequence[Frame]],
    later: tuple[int, Sequence[Frame]],
    instance: Mapping,
) -> tuple[Part, ...]:
    """One pair: `earlier` and `later` are (step, frames sampled uniformly over the clip)."""
    parts = render(
        templates["transition.txt"],
        {"references": refs, "frames": [*checkpoint(*earlier), *checkpoint(*later)]},
        task=instance["task"],
        goal=instance["goal"],
        checklist=checklist_text(instance["checklist"]),
        earlier=earlier[0],
        later=later[0],
    )
    return tuple(parts)
