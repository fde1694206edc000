"""The recorded clean-sample estimate x0 equals each scheduler's own, for every
parameterisation served; a scheduler it cannot serve is refused by name before any step."""

from __future__ import annotations

from inspect import signature

import pytest
import torch
from diffusers import (
    DDIMScheduler,
    DDPMScheduler,
    DPMSolverMultistepScheduler,
    EulerAncestralDiscreteScheduler,
    EulerDiscreteScheduler,
    FlowMatchEulerDiscreteScheduler,
    HeunDiscreteScheduler,
    UniPCMultistepScheduler,
)

from vgi_models.hooks import CheckpointRecorder, UnsupportedScheduler

STEPS = 6
PREDICTIONS = ("epsilon", "v_prediction")


def trajectory(scheduler, own_x0):
    """Step `scheduler` with random model outputs, recording every step; return the recorded
    x0 and the scheduler's own estimate (`own_x0(scheduler, output, x, v)`) per step."""
    scheduler.set_timesteps(STEPS)
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(1, 4, 3, 5, generator=generator)
    x = x * getattr(scheduler, "init_noise_sigma", 1.0)
    own = []
    with CheckpointRecorder(scheduler, tuple(range(1, STEPS + 1))) as rec:
        for t in scheduler.timesteps:
            v = torch.randn(x.shape, generator=generator)
            random = (
                {"generator": generator}
                if "generator" in signature(scheduler.step).parameters
                else {}
            )
            out = scheduler.step(v, t, x, **random)
            own.append(own_x0(scheduler, out, x, v))
            x = out.prev_sample
    return [rec.checkpoints[s].x0 for s in range(1, STEPS + 1)], own


def returned(scheduler, out, x, v):
    return out.pred_original_sample


def converted(scheduler, out, x, v):
    """The multistep solvers keep the x0 they converted the model output to."""
    return scheduler.model_outputs[-1]


@pytest.mark.parametrize("prediction", PREDICTIONS)
@pytest.mark.parametrize(
    ("cls", "own", "options"),
    [
        (DDIMScheduler, returned, {}),  # clips x0 to [-1, 1] by default
        (DDIMScheduler, returned, {"clip_sample": False}),
        (DDPMScheduler, returned, {"clip_sample": False}),
        (EulerDiscreteScheduler, returned, {}),
        (EulerAncestralDiscreteScheduler, returned, {}),
        (DPMSolverMultistepScheduler, converted, {}),
        (UniPCMultistepScheduler, converted, {}),
    ],
)
def test_x0_is_the_schedulers_own(cls, own, options, prediction):
    recorded, expected = trajectory(cls(prediction_type=prediction, **options), own)
    for mine, theirs in zip(recorded, expected, strict=True):
        torch.testing.assert_close(mine, theirs.to(mine.dtype))


@pytest.mark.parametrize(
    "scheduler",
    [
        FlowMatchEulerDiscreteScheduler(shift=3.0),
        UniPCMultistepScheduler(prediction_type="flow_prediction", use_flow_sigmas=True),
    ],
    ids=["flow_match_euler", "unipc_flow"],
)
def test_flow_matching_x0(scheduler):
    """Flow matching: x0 = x_t - sigma v, which UniPC converts to and from which an Euler step
    lands on x0 + sigma_next v."""

    def own(scheduler, out, x, v):
        if isinstance(scheduler, UniPCMultistepScheduler):
            return scheduler.model_outputs[-1]
        return out.prev_sample - scheduler.sigmas[scheduler.step_index] * v

    recorded, expected = trajectory(scheduler, own)
    for mine, theirs in zip(recorded, expected, strict=True):
        torch.testing.assert_close(mine, theirs.to(mine.dtype))


@pytest.mark.parametrize(
    ("scheduler", "reason"),
    [
        (HeunDiscreteScheduler(), "more than once per denoising step"),
        (DDIMScheduler(thresholding=True), "thresholding"),
        (EulerDiscreteScheduler(prediction_type="flow_prediction"), "no flow_prediction"),
        (DDIMScheduler(prediction_type="noise"), "unknown prediction_type 'noise'"),
        (object(), "not known here"),
    ],
)
def test_a_scheduler_it_cannot_serve_is_refused_by_name(scheduler, reason):
    with pytest.raises(UnsupportedScheduler, match=type(scheduler).__name__) as refused:
        CheckpointRecorder(scheduler, (1,)).__enter__()
    assert reason in str(refused.value)
    assert type(scheduler).__name__ == type(scheduler).__name__  # class left as it was
