"""Qwen-Image-Edit's prompt processor without torchvision.

transformers 5.24 cannot build a `Qwen2VLProcessor` unless torchvision is installed: its
constructor checks the video processor's class, which exists only with torchvision, and no
lock of the project installs it. The pipelines hand their processor text and images only, so
`ImageQwen2VLProcessor` is `Qwen2VLProcessor` without its video half: the same tokens and pixel
values for an image. Its image processor is the PIL backend, which is what
`Qwen2VLImageProcessor` falls back to without torchvision.
"""

from __future__ import annotations

from transformers import Qwen2Tokenizer, Qwen2VLImageProcessorPil, Qwen2VLProcessor


class ImageQwen2VLProcessor(Qwen2VLProcessor):
    """`Qwen2VLProcessor` of an image processor and a tokenizer (no video processor)."""

    def __init__(self, image_processor=None, tokenizer=None, chat_template=None, **kwargs):
        super().__init__(image_processor, tokenizer, chat_template=chat_template, **kwargs)


def load_processor(source: str) -> ImageQwen2VLProcessor:
    """The processor saved in the pipeline folder's `processor/` (its image processor's
    settings and its tokenizer)."""
    where = {"subfolder": "processor", "local_files_only": True}
    return ImageQwen2VLProcessor(
        Qwen2VLImageProcessorPil.from_pretrained(source, **where),
        Qwen2Tokenizer.from_pretrained(source, **where),
    )


def recorded_as_checkpoint(pipe):
    """`pipe` with its processor recorded in its config (model_index.json) as a checkpoint
    names it, `transformers.Qwen2VLProcessor`: a saved pipeline loads as a downloaded one."""
    pipe.register_to_config(processor=("transformers", "Qwen2VLProcessor"))
    return pipe
