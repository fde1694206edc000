"""`ImageProvider`: what an image model's service must say and do, subclassed once per
provider in its own module of this package (registered in `providers.PROVIDERS`).

The class side is the video providers' (`SettingChecks`: `SETTINGS` and the checks of a
registry entry's settings), read with no SDK imported. The instance is one job's client:
`generate(image, prompt)` returns the image as PNG bytes, raises `Refused` with the
provider's reason where the service answered without an image (a safety filter, a
policy: a finished, billed answer), `ServiceError` where it failed (a refused key, a bad
request), and `Retry` where it still answered 429 or 5xx after every attempt, or where no
answer came to a request that may have been taken (never sent again: a second payment).
Each request the SDK sends is counted in `requests` and, given `pace`, in the run's
shared window right before it goes out.
"""

from __future__ import annotations

import io
import re
from abc import ABC, abstractmethod
from pathlib import Path

from workflow_scripts.common.http import Answer, ServiceError, answer_of, request_hooks, retry_after
from workflow_scripts.video_api.provider import Refused, Retry, Setting, SettingChecks

__all__ = ["ImageProvider", "Refused", "Retry", "Setting", "as_png", "sized"]

ATTEMPTS = 5
PNG = b"\x89PNG\r\n\x1a\n"
ASPECT = 16 / 9  # the release's input images'


def sized(k: str, aspect: float = ASPECT) -> tuple[int, int]:
    """(width, height) of a `1K`, `2K`, `4K` size: about (1024 K)^2 pixels at `aspect`."""
    pixels = (1024 * int(k.removesuffix("K"))) ** 2
    return round((pixels * aspect) ** 0.5), round((pixels / aspect) ** 0.5)


def as_png(data: bytes) -> bytes:
    """An image's bytes as PNG (a JPEG or WebP re-encoded; a PNG as it came)."""
    if data.startswith(PNG):
        return data
    from PIL import Image

    out = io.BytesIO()
    Image.open(io.BytesIO(data)).save(out, format="PNG")
    return out.getvalue()


class ImageProvider(SettingChecks, ABC):
    """An image model's service (the module docstring); a subclass fills in `SETTINGS` and
    every abstract method."""

    @classmethod
    def nominal_size(cls, generation: dict) -> tuple[int, int] | None:
        """(width, height) of the image asked for, for the plan (None: the service's choice,
        or the input's size): a `size` of WIDTHxHEIGHT or WIDTH*HEIGHT."""
        match = re.fullmatch(r"(\d+)[x*](\d+)", str(generation.get("size", "")))
        return (int(match[1]), int(match[2])) if match else None

    def __init__(self, spec, key: str, pace=None, timeout_s: float = 300.0) -> None:
        self.model_id, self.generation = spec.model_id, spec.generation
        self.pace, self.requests = pace, 0
        self.connect(key, spec.base_url, request_hooks(self._sending), timeout_s)

    def _sending(self) -> None:
        if self.pace:
            self.pace.acquire_blocking()
        self.requests += 1

    def generate(self, image: Path, prompt: str) -> bytes:
        """The image made of `image` and `prompt`, as PNG; a request not taken (429, 5xx,
        never connected) is sent again after the server's hint or a backoff."""
        from workflow_scripts.video_api.operation import sent_again_if_not_taken  # tenacity

        retrying = sent_again_if_not_taken("request", ATTEMPTS)
        return as_png(retrying(self.request, Path(image), prompt))

    def error_for(self, status: int, message: str, headers=None, code: str | None = None,
                  details=None) -> Exception:  # fmt: skip
        """The exception for an HTTP error answer: `Retry` (with the server's hint, from its
        headers, `details` or message) for 408, 429, 5xx, else `ServiceError`."""
        reason = f"HTTP {status}{f' {code}' if code else ''}: {message}"[:300]
        if answer_of(status, message) is Answer.RETRY:
            return Retry(reason, retry_after(headers, details or message))
        return ServiceError(reason)

    @abstractmethod
    def connect(self, key: str, base_url: str | None, hooks: dict, timeout_s: float) -> None:
        """Make the SDK's client (importing the SDK), its httpx client given `hooks`, its
        own retries off."""

    @abstractmethod
    def request(self, image: Path, prompt: str) -> bytes:
        """One request: the image's bytes as the service sent them."""

    @abstractmethod
    def close(self) -> None:
        """Close the SDK's client and its connections."""
