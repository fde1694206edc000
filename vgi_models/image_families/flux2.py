"""FLUX.2 [dev] through diffusers' `Flux2Pipeline` (black-forest-labs/FLUX.2-dev): a 32B
rectified-flow transformer conditioned on Mistral Small 3.1 (`Mistral3ForConditionalGeneration`,
prompted through a `PixtralProcessor`'s chat template); the input image goes in as the one
reference image, whose VAE latents join the noise tokens in the transformer's sequence.

Recipe (the model card's diffusers example): 50 steps (28 named there as the cheaper
trade-off), `guidance_scale=4` (guidance-distilled: the scale is embedded in the transformer,
one pass a step, no negative prompt), seeded generator; both are also the pipeline's call
defaults. Size: left unset, the output takes the reference image's size (capped at 1024x1024
pixels of area, floored to multiples of 16); the registry sets it so that every image has one
size. Prompt upsampling (`caption_upsample_temperature`) stays off: it rewrites the benchmark's
prompt by sampling from the text encoder outside the seeded generator.
"""

from __future__ import annotations

from vgi_models.image_families.base import ImageFamily


class Flux2(ImageFamily):
    """`flux2`: FLUX.2 [dev] (`Flux2Pipeline`)."""

    OPTIONAL = ("guidance_scale", "max_sequence_length")  # left out: the pipeline's defaults

    name = "flux2"

    def pipeline_class(self):
        from diffusers import Flux2Pipeline

        return Flux2Pipeline

    def load(self, source: str, generation: dict, dtype):
        """Every component in `dtype` (bfloat16 in the model card); the processor built
        without torchvision (`flux2_processor`)."""
        from vgi_models.image_families.flux2_processor import load_processor, recorded_as_checkpoint

        # diffusers cannot check a passed processor against a class it cannot import: the
        # processor joins after the rest has loaded
        pipe = self.pipeline_class().from_pretrained(
            source, tokenizer=None, dtype=dtype, local_files_only=True
        )
        pipe.register_modules(tokenizer=load_processor(source))
        return recorded_as_checkpoint(pipe)
