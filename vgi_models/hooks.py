"""Capture the clean-sample estimate x0 (and the noisy latent x_t) after chosen denoising steps.

The scheduler's `step` receives the model's (guidance-combined) output for the current noisy
sample; x0 follows from it by the scheduler's parameterisation (`clean_estimator`). Wrapping
the scheduler instance works whether or not a pipeline offers a step callback.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import torch

# The space a scheduler's sample lives in, by scheduler class; each calls `step` once a step.
FLOW = "flow matching"  # x_t = (1 - sigma) x0 + sigma noise; the model predicts the velocity
VP_TIMESTEP = "variance preserving"  # x_t = sqrt(a) x0 + sqrt(1 - a) noise, a = alphas_cumprod[t]
VP_SIGMA = "variance preserving, by sigma"  # the same, a = 1 / (1 + sigma^2) of its sigmas
SIGMA = "sigma"  # x = x0 + sigma noise (k-diffusion, Euler); the model sees x / sqrt(sigma^2 + 1)
# Flow matching in MiniMax-H3's convention: timestep t = 1 - sigma (1: clean) and a velocity
# towards the data, so x0 = x_t + (1 - t) v
DATAWARD = "flow matching, data-ward velocity"
SPACES = {
    "FlowMatchEulerDiscreteScheduler": FLOW,
    "DDIMScheduler": VP_TIMESTEP,
    "DDPMScheduler": VP_TIMESTEP,
    "CogVideoXDDIMScheduler": VP_TIMESTEP,
    "DPMSolverMultistepScheduler": VP_SIGMA,
    "UniPCMultistepScheduler": VP_SIGMA,
    "EulerDiscreteScheduler": SIGMA,
    "EulerAncestralDiscreteScheduler": SIGMA,
    "MiniMaxH3Scheduler": DATAWARD,
}
NEVER_CLIPS = {"CogVideoXDDIMScheduler"}  # its step ignores clip_sample
TWICE = "calls `step` more than once per denoising step, so steps cannot be counted by its calls"
REFUSED = {
    "HeunDiscreteScheduler": TWICE,
    "KDPM2DiscreteScheduler": TWICE,
    "KDPM2AncestralDiscreteScheduler": TWICE,
    "CogVideoXDPMScheduler": "takes the previous step's x0 and timestep before the sample, so "
    "its model output and sample cannot be read from its arguments",
}


class UnsupportedScheduler(ValueError):
    """A scheduler whose clean-sample estimate cannot be read from its `step` calls."""


def clean_estimator(scheduler) -> Callable:
    """x0 = f(model_output, timestep, sample) for the step `scheduler` has just taken, as the
    scheduler itself estimates it (its `pred_original_sample`, clipping included); raises
    `UnsupportedScheduler` naming the scheduler and why, rather than record wrong checkpoints."""
    names = [cls.__name__ for cls in type(scheduler).__mro__]
    name = names[0]
    known = next((n for n in names if n in SPACES or n in REFUSED), None)
    if known in REFUSED:
        raise UnsupportedScheduler(f"scheduler {name}: {REFUSED[known]}")
    if known is None:
        raise UnsupportedScheduler(
            f"scheduler {name}: its clean-sample estimate is not known here (known: "
            f"{', '.join(SPACES)}); its checkpoints would be wrong"
        )
    if SPACES[known] == DATAWARD:
        return _dataward
    config = scheduler.config
    prediction = config.get("prediction_type") or "flow_prediction"  # FlowMatch: velocity
    space = FLOW if prediction == "flow_prediction" else SPACES[known]
    if space == FLOW:
        if SPACES[known] in (VP_TIMESTEP, SIGMA):
            raise UnsupportedScheduler(f"scheduler {name}: no flow_prediction in {space}")
        return lambda out, t, x: x - _sigma(scheduler) * out
    if prediction not in ("epsilon", "v_prediction", "sample"):
        raise UnsupportedScheduler(f"scheduler {name}: unknown prediction_type {prediction!r}")
    if config.get("thresholding"):
        raise UnsupportedScheduler(f"scheduler {name}: dynamic thresholding of x0 is not served")
    if space == SIGMA:
        return lambda out, t, x: _from_sigma_space(prediction, out, x, _sigma(scheduler))
    clips = known not in NEVER_CLIPS and config.get("clip_sample")
    clip = clips and config.get("clip_sample_range", 1.0)

    def estimate(out, t, x):
        if space == VP_TIMESTEP:
            alpha = scheduler.alphas_cumprod.to(x.device)[t]
            scale, noise = alpha**0.5, (1 - alpha) ** 0.5
        else:  # as the solvers' `_sigma_to_alpha_sigma_t`
            sigma = _sigma(scheduler)
            scale = 1 / (sigma**2 + 1) ** 0.5
            noise = sigma * scale
        x0 = _from_vp(prediction, out, x, scale, noise)
        return x0.clamp(-clip, clip) if clip else x0

    return estimate


def _dataward(out, t, x):
    """x0 as MiniMaxH3Scheduler.step computes it: 1 - t in the sample's dtype, x + (1 - t) v."""
    sigma = 1 - torch.as_tensor(t).to(device=x.device, dtype=x.dtype)
    return x + sigma * out


def _sigma(scheduler):
    """The sigma of the step just taken (`step` has advanced `step_index`)."""
    return scheduler.sigmas[scheduler.step_index - 1]


def _from_vp(prediction: str, out, x, scale, noise):
    """x0 of x = scale x0 + noise eps (scale^2 + noise^2 = 1)."""
    if prediction == "epsilon":
        return (x - noise * out) / scale
    if prediction == "v_prediction":
        return scale * x - noise * out
    return out


def _from_sigma_space(prediction: str, out, x, sigma):
    if prediction == "epsilon":
        return x - sigma * out
    if prediction == "v_prediction":
        return out * (-sigma / (sigma**2 + 1) ** 0.5) + x / (sigma**2 + 1)
    return out


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
    recorded. `keep_xt` also stores the latent each recorded step returns. A scheduler whose
    x0 is not known (`clean_estimator`) is refused on entering, before any step.
    """

    scheduler: object
    steps: tuple[int, ...]
    keep_xt: bool = False
    checkpoints: dict[int, Checkpoint] = field(default_factory=dict)
    calls: int = 0

    def __enter__(self) -> CheckpointRecorder:
        base = type(self.scheduler)
        self._estimate = clean_estimator(self.scheduler)
        recorder = self

        def step(scheduler, model_output, timestep, sample, *args, **kwargs):
            out = base.step(scheduler, model_output, timestep, sample, *args, **kwargs)
            if scheduler is recorder.scheduler:
                recorder._record(model_output, timestep, sample, out)
            return out

        self.scheduler.__class__ = type(f"Recording{base.__name__}", (base,), {"step": step})
        self._base = base
        return self

    def _record(self, model_output, timestep, sample, out) -> None:
        self.calls += 1
        if self.calls not in self.steps:
            return
        x0 = self._estimate(model_output, timestep, sample)
        prev = out[0] if isinstance(out, tuple) else out.prev_sample
        self.checkpoints[self.calls] = Checkpoint(
            self.calls,
            x0.detach().to("cpu", copy=True),
            prev.detach().to("cpu", copy=True) if self.keep_xt else None,
        )

    def __exit__(self, *exc) -> None:
        self.scheduler.__class__ = self._base
