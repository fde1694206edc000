"""Runtime settings: attention backend, VAE tiling, placement (CPU here; offload needs a GPU)."""

from __future__ import annotations

import pytest
import torch
from PIL import Image

from vgi_models.runtime import place


def latents(pipe, spec, image):
    with torch.inference_mode():
        return pipe(
            image=Image.open(image).convert("RGB"),
            prompt="solve it",
            generator=torch.Generator().manual_seed(0),
            output_type="latent",
            **(spec.module.call_kwargs(spec.generation) | {"num_inference_steps": 4}),
        ).frames


def test_attention_backend_reaches_both_experts_and_keeps_the_result(specs, example_image):
    spec = specs["tiny_wan22"]
    torch.set_num_threads(1)
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
