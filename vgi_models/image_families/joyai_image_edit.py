"""JoyAI-Image-Edit through diffusers' `JoyImageEditPipeline` (jdopensource/JoyAI-Image-Edit-
Diffusers): JD's instruction editing model, a 16B two-stream MMDiT denoising Wan 2.1 VAE
latents, conditioned on an 8B Qwen3-VL that reads the prompt together with the input image.

Recipe: 40 steps and `guidance_scale=4.0` with a seeded generator, the example of diffusers'
JoyImage page, which are also the call's defaults and the sampling defaults the JoyAI team
gave SGLang (sgl-project/sglang#22625); guidance above 1 turns classifier-free guidance on,
against an empty negative prompt unless one is set. Size: the pipeline edits at one of its
buckets of about 1024x1024 pixels of area (`JoyImageEditImageProcessor`), the one whose aspect
is nearest the requested height and width, and resizes and centre-crops the input to it; for
16:9 that is 1344x768. `problems` refuses a size that is not a bucket, since the image would
silently come out at another one.
"""

from __future__ import annotations

from vgi_models.image_families.base import ImageFamily


class JoyAIImageEdit(ImageFamily):
    """`joyai_image_edit`: `JoyImageEditPipeline` on one input image."""

    OPTIONAL = ("guidance_scale", "negative_prompt", "max_sequence_length")

    name = "joyai_image_edit"

    def pipeline_class(self):
        """The diffusers pipeline class."""
        from diffusers import JoyImageEditPipeline

        return JoyImageEditPipeline

    def load(self, source: str, generation: dict, dtype):
        """Every component in `dtype` (bfloat16, as in diffusers' example); the processor built
        without torchvision (`qwen_processor`)."""
        from vgi_models.image_families.qwen_processor import (
            ImageQwen3VLProcessor,
            load_processor,
            recorded_as_checkpoint,
        )

        pipe = self.pipeline_class().from_pretrained(
            source,
            processor=load_processor(source, ImageQwen3VLProcessor),
            dtype=dtype,
            local_files_only=True,
        )
        return recorded_as_checkpoint(pipe)

    def generate(self, pipe, image, prompt: str, generation: dict):
        """`ImageFamily.generate` with torch's global generators seeded by `generation.seed` as
        well: the pipeline samples the input image's latent from the VAE's posterior without
        the call's generator, so that draw too is the same on every run."""
        import torch

        torch.manual_seed(generation["seed"])
        return super().generate(pipe, image, prompt, generation)

    def problems(self, source: str, generation: dict) -> list[str]:
        """A height and width that are not one of the pipeline's buckets."""
        from diffusers.pipelines.joyimage.image_processor import BUCKETS

        size = (generation["height"], generation["width"])
        if size in BUCKETS[1024]:
            return []
        return [
            f"JoyImageEditPipeline makes only its bucket sizes, not {size[1]}x{size[0]} "
            "(16:9 is height 768, width 1344)"
        ]
