"""The judge's prompts: the templates (`judge.templates`) filled in, as request parts.

A frame call's template marks where the images go: `$references` (the input image,
then the instance's ground truth where it has one; absent signals are left out) and
`$frames` (each frame after a line naming its global frame index and time). The text
around the markers becomes text parts; blank ones are left out. The verdict is text only.
The image judge's template marks each image (`image`): the input image, the reference
image (left out where there is none) and the generated image, each after its caption.
"""

from __future__ import annotations

import math
import string
from collections.abc import Mapping, Sequence

from workflow_scripts.judge.client import Part
from workflow_scripts.judge.frames import Frame

_MARK = "\x00{}\x00"


def references(image: bytes, gt_image: bytes | None, gt_text: str | None) -> tuple[Part, ...]:
    """The input image, then the reference solution the instance has (image, text)."""
    parts = [Part.of_text("Input image (the first frame the video model was given):")]
    parts.append(Part.of_image(image))
    if gt_image is not None:
        parts.append(Part.of_text("Reference solution image (a correct final state):"))
        parts.append(Part.of_image(gt_image))
    if gt_text:
        parts.append(Part.of_text(f"Reference solution: {gt_text}"))
    return tuple(parts)


def frame_parts(frames: Sequence[Frame], label: str = "") -> list[Part]:
    """Each frame after its `<label>frame I, t=T s` line."""
    parts = []
    for frame in frames:
        parts.append(Part.of_text(f"{label}frame {frame.index}, t={frame.time:.2f} s"))
        parts.append(Part.of_image(frame.jpeg))
    return parts


def render(template: str, images: Mapping[str, Sequence[Part]], **values) -> list[Part]:
    """`template` filled with `values`, each marker of `images` replaced by its parts."""
    marks = {name: _MARK.format(name) for name in images}
    text = string.Template(template).substitute(values, **marks)
    parts: list[Part] = []
    for piece in text.split("\x00"):
        if piece in images:
            parts += images[piece]
        elif piece.strip():
            parts.append(Part.of_text(piece.strip("\n")))
    return parts


def checklist_text(checklist: Sequence[str]) -> str:
    return "\n".join(f"{n}. {item}" for n, item in enumerate(checklist, 1))


def frame_range(indices: Sequence[int], times: Sequence[float]) -> str:
    """`frames 9-18, t = 0.56-1.12 s`."""
    return f"frames {indices[0]}-{indices[-1]}, t = {times[0]:.2f}-{times[-1]:.2f} s"


def nomination_cap(frames: int) -> int:
    """The most frames a window of `frames` may nominate: ceil(frames / 2)."""
    return math.ceil(frames / 2)


def completeness(
    templates: Mapping[str, str], refs, frames: Sequence[Frame], instance: Mapping, fps: float
) -> tuple[Part, ...]:
    """One call: the whole clip at `fps` against the task's tier standard (no goal)."""
    parts = render(
        templates["completeness.txt"],
        {"references": refs, "frames": frame_parts(frames)},
        task=instance["task"],
        level=instance["level"],
        instance=instance["instance"],
        standard=instance["tier_standard"],
        fps=f"{fps:g}",
    )
    return tuple(parts)


def window(
    templates: Mapping[str, str],
    refs,
    frames: Sequence[Frame],
    instance: Mapping,
    place: tuple[int, int, int],
    sampling: str,
) -> tuple[Part, ...]:
    """One rubric window; `place` is (round, window k, of n windows), k from 1."""
    round_, k, n = place
    span = frame_range([f.index for f in frames], [f.time for f in frames])
    parts = render(
        templates["window.txt"],
        {"references": refs, "frames": frame_parts(frames)},
        task=instance["task"],
        goal=instance["goal"],
        checklist=checklist_text(instance["checklist"]),
        batch=f"Round {round_}, window {k} of {n}: {span}, {sampling}.",
        cap=nomination_cap(len(frames)),
        round=round_,
    )
    return tuple(parts)


def window_listing(windows: Sequence[dict]) -> str:
    """Every window's comments by round, under its frame and time range; `(none)` if none."""
    lines, current = [], None
    totals = {r: sum(doc["round"] == r for doc in windows) for r in {d["round"] for d in windows}}
    for doc in windows:
        if doc["round"] != current:
            current = doc["round"]
            lines.append(f"### Round {current}")
        k, n = doc["window"] + 1, totals[current]
        lines.append(f"Window {k} of {n}: {frame_range(doc['frames'], doc['times'])}")
        for evaluation in doc["evaluations"]:
            cited = ", ".join(map(str, evaluation["frame_indices"])) or "none shown"
            lines.append(f"- frames {cited}: {evaluation['comment']}")
        if not doc["evaluations"]:
            lines.append("(none)")
    return "\n".join(lines)


def verdict(
    templates: Mapping[str, str], instance: Mapping, windows: Sequence[dict], rounds: str
) -> tuple[Part, ...]:
    """The text-only verdict: de-duplicated violations per checklist item from all comments."""
    checklist = instance["checklist"]
    text = string.Template(templates["verdict.txt"]).substitute(
        task=instance["task"],
        goal=instance["goal"],
        checklist=checklist_text(checklist),
        k=len(checklist),
        rounds=rounds,
        windows=window_listing(windows),
    )
    return (Part.of_text(text),)


def verdict_retry(templates: Mapping[str, str], missing: Sequence[int], k: int) -> Part:
    """The line added to the verdict request when a reply left out checklist items."""
    text = string.Template(templates["verdict_retry.txt"])
    return Part.of_text(text.substitute(missing=", ".join(map(str, missing)), k=k))


NO_REFERENCE = "None for this instance."  # `$reference_text`, `$answer` where it has none


def image(
    templates: Mapping[str, str],
    instance: Mapping,
    image: bytes,
    gt_image: bytes | None,
    generated: bytes,
) -> tuple[Part, ...]:
    """The image judge's one call (the paper's Table 19): the task and its specification
    (`image_prompt`), the reference description and answer, and the input, reference (where
    there is one) and generated images."""

    def captioned(caption: str, jpeg: bytes | None) -> list[Part]:
        return [] if jpeg is None else [Part.of_text(caption), Part.of_image(jpeg)]

    images = {
        "input_image": captioned("Input image (the starting state the model was given):", image),
        "reference_image": captioned("Reference image (a correct final state):", gt_image),
        "generated_image": captioned("Generated image (the image to judge):", generated),
    }
    parts = render(
        templates["image.txt"],
        images,
        task=instance["task"],
        spec=instance["image_prompt"],
        reference_text=instance.get("gt_text") or NO_REFERENCE,
        answer=instance.get("answer") or NO_REFERENCE,
    )
    return tuple(parts)


class Templates:
    """The video judge's requests from the templates (`judge.prompts`), by call: each
    gives the system prompt and the parts (`official.OfficialPrompts` gives the official
    judge's, by the same calls)."""

    def __init__(self, templates: Mapping[str, str]):
        self.templates = templates

    def references(self, instance: Mapping, image: bytes, gt_image, gt_text) -> tuple[Part, ...]:
        return references(image, gt_image, gt_text)

    def completeness(self, instance: Mapping, refs, frames: Sequence[Frame], fps: float):
        parts = completeness(self.templates, refs, frames, instance, fps)
        return self.templates["completeness_system.txt"], parts

    def window(self, instance, refs, frames, place, sampling: str, round_frames: int, fps):
        parts = window(self.templates, refs, frames, instance, place, sampling)
        return self.templates["window_system.txt"], parts

    def verdict(self, instance, windows, shown, fps, clip, refs, rounds: str):
        return self.templates["verdict_system.txt"], verdict(
            self.templates, instance, windows, rounds
        )
