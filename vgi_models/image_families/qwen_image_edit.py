"""Qwen-Image-Edit through diffusers: `QwenImageEditPipeline` (Qwen/Qwen-Image-Edit) or, as
`qwen_image_edit_plus`, `QwenImageEditPlusPipeline` (Qwen-Image-Edit-2509 and -2511), which
has the same components and the same call on one image (its prompt names it "Picture 1",
and its text encoder sees the image at 384x384 pixels of area instead of 1024x1024).

Recipe (the model cards' example): `true_cfg_scale=4.0`, `negative_prompt=" "` (a blank
negative prompt: it turns classifier-free guidance on), 50 steps for Qwen-Image-Edit, 40 and
`guidance_scale=1.0` for 2509/2511 (not guidance-distilled: the pipeline ignores it), seeded
generator; the output size defaults to 1024x1024 pixels of area at the input's aspect.
"""

from __future__ import annotations

from vgi_models.image_families.base import ImageFamily

PIPELINES = {
    "qwen_image_edit": "QwenImageEditPipeline",
    "qwen_image_edit_plus": "QwenImageEditPlusPipeline",
}


class QwenImageEdit(ImageFamily):
    """`qwen_image_edit` or `qwen_image_edit_plus` (`PIPELINES`)."""

    OPTIONAL = ("negative_prompt", "true_cfg_scale", "guidance_scale", "max_sequence_length")

    def __init__(self, name: str) -> None:
        if name not in PIPELINES:
            raise ValueError(f"no Qwen-Image-Edit variant {name!r}")
        self.name = name

    def pipeline_class(self):
        """The diffusers pipeline class of the variant."""
        import diffusers

        return getattr(diffusers, PIPELINES[self.name])

    def load(self, source: str, generation: dict, dtype):
        """Every component in `dtype`, as in the model cards (bfloat16); the processor built
        without torchvision (`qwen_processor`)."""
        from vgi_models.image_families.qwen_processor import load_processor, recorded_as_checkpoint

        pipe = self.pipeline_class().from_pretrained(
            source, processor=load_processor(source), dtype=dtype, local_files_only=True
        )
        return recorded_as_checkpoint(pipe)
