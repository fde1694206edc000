"""Running a tiny pipeline from tests, its denoising steps recorded."""

from __future__ import annotations

import torch
from PIL import Image

from vgi_models.hooks import CheckpointRecorder

STEPS = (1, 2, 3, 4, 10, 20, 40)
PROMPT = "move the green dot to the red dot"


def run_pipeline(
    spec, image, steps=(), output_type="latent", pipe=None, record=True, **generation_overrides
):
    """`pipe` (default: `spec.build()`) on `image` with the entry's seed and generation settings,
    `generation_overrides` on top; x0 and x_t recorded at `steps`.

    Returns (pipe, recorder or None, output).
    """
    torch.set_num_threads(1)
    pipe = pipe or spec.build()
    generation = spec.generation | generation_overrides
    kwargs = dict(
        image=Image.open(image).convert("RGB"),
        prompt=PROMPT,
        generator=torch.Generator().manual_seed(generation["seed"]),
        output_type=output_type,
        **spec.pipeline_family.call_kwargs(generation),
    )
    with torch.inference_mode():
        if not record:
            return pipe, None, pipe(**kwargs)
        with CheckpointRecorder(pipe.scheduler, tuple(steps), keep_xt=True) as rec:
            return pipe, rec, pipe(**kwargs)
