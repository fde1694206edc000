"""An input image as a paid request carries it (both API branches)."""

from __future__ import annotations

import base64
import mimetypes
from pathlib import Path

from vgi_models.input_image import model_image_bytes


def image_mime(image: Path) -> str:
    """The media type of an input image file, by its extension (PNG where unknown)."""
    return mimetypes.guess_type(str(image))[0] or "image/png"


def image_payload(image: Path) -> tuple[bytes, str]:
    """The bytes and media type an API is sent for an input image: the file itself, or a
    PNG of what it shows where the file is 16-bit or transparent (`vgi_models.input_image`)."""
    return model_image_bytes(image, image_mime(image))


def data_uri(image: Path) -> str:
    """An input image inline: `data:<type>;base64,<bytes>`."""
    data, mime = image_payload(image)
    return f"data:{mime};base64,{base64.b64encode(data).decode()}"
