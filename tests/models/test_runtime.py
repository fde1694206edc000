"""Runtime settings: attention backend, VAE tiling, placement (CPU here; offload needs a GPU)."""

from __future__ import annotations

import pytest
import torch

from tests.support.pipelines import run_pipeline
from vgi_models.runtime import place


def latents(pipe, spec, image):
    return run_pipeline(spec, image, pipe=pipe, record=False, num_inference_steps=4)[2].frames


def test_attention_backend_reaches_both_experts_and_keeps_the_result(specs, example_image):
    spec = specs["tiny_wan22"]
    native = latents(place(spec.build(), {}, "cpu"), spec, example_image)
    pipe = place(spec.build(), {"attention_backend": "_native_math"}, "cpu")
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
    assert place(spec.build(), {"vae_tiling": True}, "cpu").vae.use_tiling
    assert not place(spec.build(), {}, "cpu").vae.use_tiling
    with pytest.raises(ValueError):
        place(spec.build(), {"attention_backend": "no_such_backend"}, "cpu")
