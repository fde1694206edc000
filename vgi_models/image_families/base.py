"""The image family protocol: what `vgi_models.generate_image` asks of an image pipeline."""

from __future__ import annotations

from vgi_models.families.base import PipelineFamily


class ImageFamily(PipelineFamily):
    """An image-editing pipeline family: how its pipeline is built and called on one input
    image and one prompt; one module of `vgi_models.image_families` with an instance in
    `IMAGE_FAMILIES` (`PipelineFamily`)."""

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
