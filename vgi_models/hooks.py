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
    """Records chosen steps of one scheduler instance for the duration of a `with` block.

    The instance's class is swapped for a recording subclass, so copies a pipeline makes of
    its scheduler (LTX-2 deep-copies it for the audio stream) step normally and are not
    recorded. `keep_xt` also stores the latent each recorded step returns.
    """

    scheduler: object
    steps: tuple[int, ...]
    keep_xt: bool = False
    checkpoints: dict[int, Checkpoint] = field(default_factory=dict)
    calls: int = 0

    def __enter__(self) -> CheckpointRecorder:
        base = type(self.scheduler)
        recorder = self

        def step(scheduler, model_output, timestep, sample, *args, **kwargs):
            out = base.step(scheduler, model_output, timestep, sample, *args, **kwargs)
            if scheduler is recorder.scheduler:
                recorder._record(model_output, sample, out)
            return out

        self.scheduler.__class__ = type(f"Recording{base.__name__}", (base,), {"step": step})
        self._base = base
        return self

    def _record(self, model_output, sample, out) -> None:
        self.calls += 1
        if self.calls not in self.steps:
            return
        sigma = self.scheduler.sigmas[self.scheduler.step_index - 1]
        x0 = sample - sigma * model_output
        prev = out[0] if isinstance(out, tuple) else out.prev_sample
        self.checkpoints[self.calls] = Checkpoint(
            self.calls,
            x0.detach().to("cpu", copy=True),
            prev.detach().to("cpu", copy=True) if self.keep_xt else None,
        )

    def __exit__(self, *exc) -> None:
        self.scheduler.__class__ = self._base
