"""`ImageProvider`: what an image model's service must say and do, subclassed once per
provider in its own module of this package (registered in `providers.PROVIDERS`).

The class side is the video providers' (`SettingChecks`: `SETTINGS` and the checks of a
registry entry's settings), read with no SDK imported. The instance is one job's client:
`generate(image, prompt)` returns the image's bytes as the service sent them (the job
keeps them before `as_png` converts them), raises `Refused` with the provider's reason
where the service answered without an image (a safety filter, a policy: a finished, billed
answer), `NoImage` where it answered 2xx without an image it could hand over (billed),
`ServiceError` where it answered an error that says it did not take the request (a refused
key, a bad request), and `Retry` where it still answered 408 or 429 after every attempt or
never connected (`unsure` False: not taken), or where it may have taken the request
(`unsure`: no answer, a 5xx after the body was sent, an answer that could not be read;
never sent again without the user's word: a second payment). Each request the SDK sends is
counted in `requests` and, given `pace`, in the run's shared window right before it goes
out. `CONSOLE` names where the user sees what was billed.
"""

from __future__ import annotations

import io
import re
from abc import ABC, abstractmethod
from pathlib import Path

from workflow_scripts.common.http import ServiceError, request_hooks
from workflow_scripts.paid.errors import Refused, Retry, error_answer
from workflow_scripts.paid.settings import Setting, SettingChecks

__all__ = [
    "ImageProvider",
    "NoImage",
    "Refused",
    "Retry",
    "Setting",
    "as_png",
    "from_base64",
    "reply_bytes",
    "sized",
]

ATTEMPTS = 5
PNG = b"\x89PNG\r\n\x1a\n"
ASPECT = 16 / 9  # the release's input images'


def sized(k: str, aspect: float = ASPECT) -> tuple[int, int]:
    """(width, height) of a `1K`, `2K`, `4K` size: about (1024 K)^2 pixels at `aspect`."""
    pixels = (1024 * int(k.removesuffix("K"))) ** 2
    return round((pixels * aspect) ** 0.5), round((pixels / aspect) ** 0.5)


class NoImage(Exception):
    """The service answered 2xx (the request taken and billed) without an image it could hand
    over: `reason`, and `reply` (bytes: the answer as the SDK read it) kept as its trace."""

    def __init__(self, reason: str, reply: bytes = b"") -> None:
        super().__init__(reason)
        self.reason, self.reply = reason, reply


def from_base64(text: str, answer) -> bytes:
    """The image in an answer's base64 field `text`; `NoImage` where it is not base64 (the
    answer, `answer`'s JSON where the SDK gives one, kept as its trace)."""
    import base64

    try:
        return base64.b64decode(text, validate=True)
    except ValueError:
        raise NoImage("the answer's image is not base64", reply_bytes(answer)) from None


def reply_bytes(answer) -> bytes:
    """An SDK's answer as bytes to keep: its JSON where it is a pydantic model, else repr."""
    dump = getattr(answer, "model_dump_json", None)
    return (dump() if dump else repr(answer)).encode()


def as_png(data: bytes) -> bytes:
    """An image's bytes as PNG (a JPEG or WebP re-encoded; a PNG as it came, once it
    decodes); an error (PIL's, or ValueError) where they are no image."""
    from PIL import Image

    with Image.open(io.BytesIO(data)) as picture:
        picture.load()  # the whole image decodes
        if data.startswith(PNG):
            return data
        out = io.BytesIO()
        picture.save(out, format="PNG")
    return out.getvalue()


class ImageProvider(SettingChecks, ABC):
    """An image model's service (the module docstring); a subclass fills in `SETTINGS`,
    `CONSOLE` and every abstract method."""

    CONSOLE = "the provider's console"  # where the user sees the requests billed

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
        """The image made of `image` and `prompt`, its bytes as the service sent them; a
        request not taken (408, 429, never connected) is sent again after the server's hint
        or a backoff. An error of no known kind once a request went out (an answer that
        could not be read) is unsure: it may have been taken."""
        from workflow_scripts.paid.retry import sent_again_if_not_taken  # tenacity

        retrying = sent_again_if_not_taken("request", ATTEMPTS)
        try:
            return retrying(self.request, Path(image), prompt)
        except (Refused, NoImage, ServiceError, Retry):
            raise
        except Exception as error:
            if not self.requests:
                raise
            reason = f"the answer could not be read ({type(error).__name__}: {error})"[:300]
            raise Retry(reason, unsure=True) from error

    def error_for(self, status: int, message: str, headers=None, code: str | None = None,
                  details=None) -> Exception:  # fmt: skip
        """The exception for an HTTP error answer (`paid.errors.error_answer`)."""
        return error_answer(status, message, headers, code, details)

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
