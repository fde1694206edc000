"""One download of a paid reply behind a signed link (a video's, Qwen-Image's image), for
every provider that answers with one: a GET without the key, one verdict per HTTP answer.

- 2xx: the bytes;
- 403, 404, 410: `LinkGone`, the link no longer serves the file (storage answers an expired
  or revoked signature 403 AccessDenied, a removed object 404 NoSuchKey): the provider's
  copy is gone, and only the user's word pays for it again;
- 408, 429, 5xx, or no answer: `Retry` (a GET pays nothing: sent again up to `attempts`,
  then the caller's to try later);
- any other: `ServiceError`.
"""

from __future__ import annotations

from workflow_scripts.common.http import ServiceError, retry_after
from workflow_scripts.paid.errors import Retry

GONE = (403, 404, 410)


class LinkGone(Exception):
    """The signed link no longer serves the file (HTTP 403, 404 or 410)."""


def fetch(http, url: str, what: str, attempts: int = 1) -> bytes:
    """The bytes behind signed link `url` (`what` it is, for messages), fetched with httpx
    client `http` (its own, keyless), following redirects; see the module for the verdicts."""
    import httpx

    from workflow_scripts.paid.retry import sent_again_if_not_taken  # tenacity

    def get() -> bytes:
        try:
            response = http.get(url, follow_redirects=True)
        except httpx.TransportError as error:
            raise Retry(f"{what}: no answer: {type(error).__name__}") from None
        status = response.status_code
        if response.is_success:
            return response.content
        detail = (response.text or response.reason_phrase)[:200]
        if status in GONE:
            raise LinkGone(f"HTTP {status}: {what} is gone ({detail})")
        if status in (408, 429) or status >= 500:
            raise Retry(f"HTTP {status}: {what}: {detail}", retry_after(response.headers, detail))
        raise ServiceError(f"HTTP {status}: {what}: {detail}")

    return sent_again_if_not_taken(what, attempts)(get)
