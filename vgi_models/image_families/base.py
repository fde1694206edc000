"""The image family protocol: what `vgi_models.generate_image` asks of an image pipeline."""

from __future__ import annotations

import importlib


class ImageFamily:
    """An image-editing pipeline family: how its pipeline is built and called on one input
    image and one prompt. As a video family (`vgi_models.families.base`), it is one module of
    `vgi_models.image_families` with an instance in `IMAGE_FAMILIES`, its tiny randomly
    initialised builder in `<module>_tiny` (imported only for `source: tiny`), and torch and
    diffusers imported inside its methods."""

    name: str
    # Components that denoise: the attention backend is set on them (`vgi_models.runtime`).
    denoisers: tuple[str, ...] = ("transformer",)

    def load(self, source: str, generation: dict, dtype):
        """The pipeline with real weights from a local directory (or the local hub cache)."""
        raise NotImplementedError

    def build_tiny(self, generation: dict):
        """A randomly initialised pipeline of the family's architecture, from config alone."""
        tiny = importlib.import_module(f"{type(self).__module__}_tiny")
        return tiny.build_tiny(self, generation)

    def call_kwargs(self, generation: dict) -> dict:
        """The pipeline's keyword arguments from the model's generation settings."""
        raise NotImplementedError

    def generate(self, pipe, image, prompt: str, generation: dict):
        """The edited image (PIL) of `image` (PIL) by `prompt`, seeded by `generation.seed`
        through a CPU generator (the same noise on any device)."""
        import torch

        generator = torch.Generator("cpu").manual_seed(generation["seed"])
        with torch.inference_mode():
            output = pipe(
                image=image, prompt=prompt, generator=generator, **self.call_kwargs(generation)
            )
        return output.images[0]
