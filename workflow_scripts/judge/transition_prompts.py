"""The transition call's prompt: one checkpoint pair of one generated video.

The call shows the input image and the instance's ground truth (`prompts.references`),
then the earlier checkpoint's frames and the later one's, each frame after a line such
as `step 4, frame 37, t=2.31 s`, and ends with instructions headed
`# Checkpoint transition` that define the five labels.
"""

from __future__ import annotations

from collections.abc import Sequence

from workflow_scripts.judge.client import Part
from workflow_scripts.judge.frames import Frame
from workflow_scripts.judge.prompts import task_text

SYSTEM = (
    "You study how an image-to-video diffusion model settles on its answer to the visual "
    "reasoning task shown in its input image. You see the model's estimate of the finished "
    "video at two denoising steps and say how the solution it shows changed between them. "
    "Judge only what the frames show. Answer with JSON that follows the given schema."
)

LABEL_MEANINGS = (
    "- unrecognizable: either checkpoint is too unresolved to read a solution state;\n"
    "- stable: the solution state is readable in both and unchanged (the same answer, or a "
    "correct one in both);\n"
    "- correct_to_wrong: a correct solution state became a wrong one;\n"
    "- wrong_to_correct: a wrong solution state became a correct one;\n"
    "- wrong_to_wrong: one wrong solution state was replaced by a different wrong one."
)


def checkpoint(step: int, frames: Sequence[Frame]) -> list[Part]:
    """A checkpoint's frames, each after its `step S, frame I, t=T s` line."""
    parts = [Part.of_text(f"Checkpoint after denoising step {step}:")]
    for frame in frames:
        parts.append(Part.of_text(f"step {step}, frame {frame.index}, t={frame.time:.2f} s"))
        parts.append(Part.of_image(frame.jpeg))
    return parts


def transition(
    refs: tuple[Part, ...],
    earlier: tuple[int, Sequence[Frame]],
    later: tuple[int, Sequence[Frame]],
    goal: str,
    checklist: Sequence[str],
) -> tuple[Part, ...]:
    """One pair: `earlier` and `later` are (step, frames sampled uniformly over the clip)."""
    a, b = earlier[0], later[0]
    instructions = (
        "# Checkpoint transition\n"
        f"{task_text(goal, checklist)}\n"
        f"The frames above are decoded checkpoints of one video being generated: after denoising "
        f"steps {a} and {b}, the model's current estimate of the finished clip, sampled "
        "uniformly from its first to its last frame. Early checkpoints are blurry or noisy.\n"
        "Read the solution state each checkpoint shows (what the video does to solve the task) "
        "and judge it correct when it meets the task goal and checklist (and agrees with the "
        "reference solution, when one is shown). "
        f"Label the change from step {a} to step {b} with exactly one of:\n{LABEL_MEANINGS}\n"
        f"Describe the state at step {a} in earlier_state and at step {b} in later_state, and "
        "cite the frames that decide the label (by step and frame index) in evidence."
    )
    return (*refs, *checkpoint(*earlier), *checkpoint(*later), Part.of_text(instructions))
