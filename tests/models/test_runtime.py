"""Runtime settings: attention backend, VAE tiling, placement (CPU here; offload needs a GPU)."""

from __future__ import annotations

import pytest
import torch

from tests.support.pipelines import run_pipeline
from vgi_models.runtime import place


def placed(spec, **runtime):
    """The spec's tiny pipeline placed on the CPU with its runtime settings, `runtime` on top."""
    return place(spec.build(), spec.runtime | runtime, "cpu", spec.pipeline_family.denoisers)


def latents(pipe, spec, image):
    return run_pipeline(spec, image, pipe=pipe, record=False, num_inference_steps=4)[2].frames


def test_attention_backend_reaches_both_experts_and_keeps_the_result(specs, example_image):
    spec = specs["tiny_wan22"]
    native = latents(placed(spec), spec, example_image)
    pipe = placed(spec, attention_backend="_native_math")
    for expert in (pipe.transformer, pipe.transformer_2):
        backends = {
            m.processor._attention_backend
            for m in expert.modules()
            if hasattr(getattr(m, "processor", None), "_attention_backend")
        }
        assert backends == {"_native_math"}  # a str enum: equal to its value
    torch.testing.assert_close(latents(pipe, spec, example_image), native, atol=1e-5, rtol=1e-5)


def test_vae_tiling_and_unknown_backend(specs):
    spec = specs["tiny_wan22"]
    assert placed(spec, vae_tiling=True).vae.use_tiling
    assert not placed(spec).vae.use_tiling
    with pytest.raises(ValueError):
        placed(spec, attention_backend="no_such_backend")
