"""An input image as a paid request carries it (both API branches)."""

from __future__ import annotations

import base64
import mimetypes
from pathlib import Path


def image_mime(image: Path) -> str:
    """The media type of an input image file, by its extension (PNG where unknown)."""
    return mimetypes.guess_type(str(image))[0] or "image/png"


def data_uri(image: Path) -> str:
    """An input image inline: `data:<type>;base64,<bytes>`."""
    return f"data:{image_mime(image)};base64,{base64.b64encode(Path(image).read_bytes()).decode()}"
