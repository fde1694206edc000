"""The image family protocol: what `vgi_models.generate_image` asks of an image pipeline."""

from __future__ import annotations

from vgi_models.families.base import PipelineFamily


class ImageFamily(PipelineFamily):
    """An image-editing pipeline family: how its pipeline is built and called on one input
    image and one prompt; one module of `vgi_models.image_families` with an instance in
    `IMAGE_FAMILIES` (`PipelineFamily`). `OPTIONAL`: the call's settings passed only where
    the entry sets them (else the pipeline's defaults)."""

    OPTIONAL: tuple[str, ...] = ()

    def call_kwargs(self, generation: dict) -> dict:
        """The size and steps, and each `OPTIONAL` setting the entry sets."""
        keys = ("height", "width", "num_inference_steps")
        return {k: generation[k] for k in keys} | {
            k: generation[k] for k in self.OPTIONAL if k in generation
        }

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
