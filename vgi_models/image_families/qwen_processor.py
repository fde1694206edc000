"""The Qwen-VL prompt processors of the image families, without torchvision.

transformers 5.24 cannot build a `Qwen2VLProcessor` (Qwen-Image-Edit's) or a `Qwen3VLProcessor`
(JoyAI-Image-Edit's) unless torchvision is installed: the constructor checks the video
processor's class, which exists only with torchvision, and no lock of the project installs it.
The pipelines hand their processor text and images only, so each processor here is the
transformers one without its video half: the same tokens and pixel values for an image. Its
image processor is the PIL backend, which is what `Qwen2VLImageProcessor` (Qwen3-VL's too)
falls back to without torchvision.
"""

from __future__ import annotations

from transformers import (
    Qwen2Tokenizer,
    Qwen2VLImageProcessorPil,
    Qwen2VLProcessor,
    Qwen3VLProcessor,
)


class ImageOnly:
    """A Qwen-VL processor of an image processor and a tokenizer: transformers takes a
    processor's parts from its constructor's arguments, so this one has no video processor."""

    checkpoint_class: str  # the transformers class that a checkpoint's model_index.json names

    def __init__(self, image_processor=None, tokenizer=None, chat_template=None, **kwargs):
        super().__init__(image_processor, tokenizer, chat_template=chat_template, **kwargs)


class ImageQwen2VLProcessor(ImageOnly, Qwen2VLProcessor):
    """`Qwen2VLProcessor` without its video processor (Qwen-Image-Edit)."""

    checkpoint_class = "Qwen2VLProcessor"


class ImageQwen3VLProcessor(ImageOnly, Qwen3VLProcessor):
    """`Qwen3VLProcessor` without its video processor (JoyAI-Image-Edit)."""

    checkpoint_class = "Qwen3VLProcessor"


def load_processor(source: str, kind: type[ImageOnly] = ImageQwen2VLProcessor) -> ImageOnly:
    """The processor of class `kind` saved in the pipeline folder's `processor/` (its image
    processor's settings and its tokenizer)."""
    where = {"subfolder": "processor", "local_files_only": True}
    return kind(
        Qwen2VLImageProcessorPil.from_pretrained(source, **where),
        Qwen2Tokenizer.from_pretrained(source, **where),
    )


def recorded_as_checkpoint(pipe):
    """`pipe` with its processor recorded in its config (model_index.json) as a checkpoint
    names it (`ImageOnly.checkpoint_class`): a saved pipeline loads as a downloaded one."""
    processor = type(pipe.processor).checkpoint_class
    pipe.register_to_config(processor=("transformers", processor))
    return pipe
