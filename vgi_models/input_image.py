"""An input image as the file shows it: the one way every model, the gallery and the judge
load a benchmark image.

`Image.convert("RGB")` alone is wrong for some files: a 16-bit greyscale PNG (`I;16`) is
clipped to pure white, and a transparent pixel (RGBA, LA, a palette or a greyscale with a
transparent colour) shows whatever colour it hides. Here a 16-bit image is scaled to 8 bits
(each value >> 8) and a transparent one is composited on white. An image in a colour space
that has no one faithful RGB reading without its colour profile (CMYK and the like) is not
converted: `refusal` says why, and the benchmark check names it before any job.
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
from PIL import Image

SIXTEEN_BIT = {"I;16", "I;16B", "I;16L", "I;16N", "I"}  # "I": 16-bit values in 32 bits
WITH_ALPHA = {"RGBA", "LA", "PA", "RGBa", "La"}
PLAIN = {"1", "L", "P", "RGB"}  # convert("RGB") shows them as they are (no transparency)
WHITE = (255, 255, 255)


def refusal(image: Image.Image) -> str | None:
    """Why `image` cannot be shown to a model as the file shows it, or None."""
    if image.mode in PLAIN or image.mode in SIXTEEN_BIT or image.mode in WITH_ALPHA:
        return None
    if image.mode == "YCbCr":
        return None
    return (
        f"image is {image.mode}, which has no faithful RGB reading here: save it as 8-bit "
        "RGB (sRGB) and run again"
    )


def _transparent(image: Image.Image) -> bool:
    return image.mode in WITH_ALPHA or "transparency" in image.info


def to_rgb(image: Image.Image) -> Image.Image:
    """`image` as 8-bit RGB as it looks: 16 bits scaled (>> 8), transparency on white.
    Raises `ValueError` for an image `refusal` refuses."""
    if why := refusal(image):
        raise ValueError(why)
    if image.mode in SIXTEEN_BIT:
        values = np.asarray(image).astype(np.int64)
        eight = (np.clip(values, 0, 65535) >> 8).astype(np.uint8)
        return Image.fromarray(eight, "L").convert("RGB")
    if _transparent(image):
        rgba = image.convert("RGBA")
        white = Image.new("RGBA", rgba.size, (*WHITE, 255))
        return Image.alpha_composite(white, rgba).convert("RGB")
    return image.convert("RGB")


def load_rgb(path: str | Path) -> Image.Image:
    """The input image at `path` as 8-bit RGB as it looks (`to_rgb`), fully read."""
    with Image.open(path) as image:
        image.load()
        return to_rgb(image)


def is_plain(image: Image.Image) -> bool:
    """Whether any reader shows `image`'s file as it looks: 8-bit, no transparency."""
    return image.mode in {"1", "L", "RGB"} and not _transparent(image)


def model_image_bytes(path: str | Path, mime: str) -> tuple[bytes, str]:
    """The bytes and media type an API is sent for the input image at `path` (`mime`: its
    type by name): the file itself when it is plain (`is_plain`), else a PNG of `load_rgb`."""
    data = Path(path).read_bytes()
    with Image.open(io.BytesIO(data)) as image:
        if is_plain(image):
            return data, mime
    out = io.BytesIO()
    load_rgb(path).save(out, format="PNG")
    return out.getvalue(), "image/png"
