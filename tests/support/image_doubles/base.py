"""What the image API doubles share: a request as the server saw it (`Sent`), the scripted
answers (`Script`), the image a double makes, and `Protocol`, one provider's REST protocol
as `FakeImageAPI` (server.py) serves it."""

from __future__ import annotations

import io
from abc import ABC, abstractmethod
from dataclasses import dataclass

from PIL import Image, ImageOps


@dataclass
class Sent:
    """One request as the server saw it."""

    provider: str
    model: str
    prompt: str
    image: bytes
    settings: dict
    key: str | None
    status: int | None = None  # the answer's HTTP status (None: none was sent)


@dataclass(frozen=True)
class Script:
    """The answer to one request; the defaults give a normal reply."""

    status: int = 200  # an HTTP error (with `message`) where not 200
    message: str = "scripted error"
    retry_s: float | None = None  # a retry hint, in the protocol's own form
    delay: float = 0.0  # seconds before the answer (a slow reply)
    refuse: str | None = None  # "output" (the made image filtered) or "prompt" (the input)
    format: str | None = None  # the image's encoding, where not the protocol's own


REFUSED = Script(refuse="output")
PROMPT_BLOCKED = Script(refuse="prompt")
JPEG = Script(format="JPEG")
BROKEN = Script(format="broken")  # a reply whose image does not decode (a billed failure)


def throttled(retry_s: float = 1.0) -> Script:
    """HTTP 429 with the server's hint to retry in `retry_s` seconds."""
    return Script(status=429, message="Quota exceeded; please retry later", retry_s=retry_s)


def slow(seconds: float) -> Script:
    return Script(delay=seconds)


def made_image(source: bytes, size: tuple[int, int], image_format: str) -> bytes:
    """The double's generated image: `source` with its colours inverted, at `size` (a PNG
    signature and no image where `image_format` is BROKEN's)."""
    if image_format == BROKEN.format:
        return b"\x89PNG\r\n\x1a\nbroken"
    picture = ImageOps.invert(Image.open(io.BytesIO(source)).convert("RGB")).resize(size)
    out = io.BytesIO()
    picture.save(out, format=image_format)
    return out.getvalue()


class Protocol(ABC):
    """One provider's REST protocol."""

    provider: str  # the registry's `provider:` value
    route: object  # re.Pattern of the paths it answers (fullmatch)
    host = None  # set by the server: host(data, name) -> the URL that serves `data` (GET)

    def base_url(self, url: str) -> str:
        """The registry entry's `base_url` that points its SDK at the server at `url`."""
        return url

    @abstractmethod
    def key(self, headers) -> str | None:
        """The API key a request carries."""

    @abstractmethod
    def parse(self, match, body: bytes, headers) -> Sent:
        """The request as sent (its key filled in by the server)."""

    @abstractmethod
    def error(self, status: int, script: Script) -> tuple[dict, dict]:
        """(error body, headers) of an HTTP error `status`."""

    @abstractmethod
    def refusal(self, sent: Sent, script: Script) -> tuple[int, dict]:
        """(HTTP status, answer) of a refusal."""

    @abstractmethod
    def reply(self, sent: Sent, script: Script) -> dict:
        """The answer holding the made image."""
