"""What the provider modules share: outcomes, errors, the paced HTTP client, the factory.

A provider (`veo`, `sora`) offers `submit(image, prompt) -> operation id`, `check(id) ->
Outcome | None` (None: still running) and `close()`. Its SDK's HTTP client counts each
submission in the run's shared pacing window (`common.pacing`) right before it is sent, in
the client's request hook, as the judge's backends do; polls are not counted.
"""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass

PROVIDERS = {"veo": "veo", "sora": "sora"}  # modules of this package


@dataclass(frozen=True)
class Outcome:
    """A finished operation: the video's bytes, or the provider's reason for none."""

    video: bytes | None = None
    reason: str | None = None  # `refused: ...` (a safety filter, a policy) or `failed: ...`

    @property
    def ok(self) -> bool:
        return self.video is not None


class Retry(Exception):
    """Worth another attempt later (HTTP 429, 5xx, a dropped connection): `after` seconds,
    the server's hint when it gave one. `unsure`: no answer came to a request that may have
    reached the server (a timeout, a connection dropped mid-request)."""

    def __init__(self, reason: str, after: float | None = None, unsure: bool = False) -> None:
        super().__init__(reason)
        self.after, self.unsure = after, unsure


class UnknownOperation(Exception):
    """The provider no longer knows the operation (expired, or never known: HTTP 404)."""


class ServiceError(Exception):
    """Any other refusal of the service (a bad key, a rejected request): the job fails."""


def retry_after(headers, text: str) -> float | None:
    """Seconds the server asked to wait: Retry-After, or 'retry in Xs' in its message."""
    value = (headers or {}).get("retry-after", "")
    if re.fullmatch(r"\s*\d+(\.\d+)?\s*", value):
        return float(value)
    match = re.search(r"retry in (\d+(?:\.\d+)?)\s*s", text or "", re.IGNORECASE)
    return float(match[1]) if match else None


def http_error(code: int, message: str, headers=None, unknown_ok: bool = False) -> Exception:
    """The exception for an HTTP error: 404 on a known id is `UnknownOperation`."""
    reason = f"HTTP {code}: {message}"[:300]
    if code in (408, 429) or code >= 500:
        return Retry(reason, retry_after(headers, message))
    if code == 404 and unknown_ok:
        return UnknownOperation(reason)
    return ServiceError(reason)


def paced_hooks(pace, submits) -> dict:
    """httpx `event_hooks` that wait for room in `pace` (a SharedRateLimit, or None)
    right before each request `submits(request)` says is a submission."""

    def hook(request) -> None:
        if submits(request):
            pace.acquire_blocking()

    return {"request": [hook]} if pace else {}


def provider(spec, key: str, pace=None, timeout_s: float = 120.0):
    """The provider client of API model `spec` (a registry ModelSpec)."""
    module = importlib.import_module(f"workflow_scripts.video_api.{PROVIDERS[spec.provider]}")
    return module.Provider(spec, key, pace, timeout_s)
