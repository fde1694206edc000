"""Capture the clean-sample estimate x0 (and the noisy latent x_t) after chosen denoising steps.

Every model of the study samples with flow matching: the scheduler's `step` receives the
guidance-combined velocity v for the current noisy latent x_t, and the clean estimate is
x0 = x_t - sigma_t * v. Wrapping the scheduler instance works whether or not a pipeline
offers a step callback.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch


@dataclass
class Checkpoint:
    """The states recorded after one 1-based denoising step, kept on the CPU."""

    step: int
    x0: torch.Tensor
    xt: torch.Tensor | None = None


@dataclass
class CheckpointRecorder:
    """Wraps `scheduler.step` for the duration of a `with` block and records chosen steps.

    `keep_xt` also stores the latent the step returns.
    """

    scheduler: object
    steps: tuple[int, ...]
    keep_xt: bool = False
    checkpoints: dict[int, Checkpoint] = field(default_factory=dict)
    calls: int = 0

    def __enter__(self) -> CheckpointRecorder:
        original = self.scheduler.step

        def step(model_output, timestep, sample, *args, **kwargs):
            out = original(model_output, timestep, sample, *args, **kwargs)
            self.calls += 1
            if self.calls in self.steps:
                sigma = self.scheduler.sigmas[self.scheduler.step_index - 1]
                x0 = sample - sigma * model_output
                prev = out[0] if isinstance(out, tuple) else out.prev_sample
                self.checkpoints[self.calls] = Checkpoint(
                    self.calls,
                    x0.detach().to("cpu", copy=True),
                    prev.detach().to("cpu", copy=True) if self.keep_xt else None,
                )
            return out

        self.scheduler.step = step
        return self

    def __exit__(self, *exc) -> None:
        del self.scheduler.step  # the instance attribute shadowed the class method
