"""What the clients of remote services share (the judge's VLM backends, the paid API
providers): the service's failure, reading an HTTP error answer, the request hook that
paces sends, and the registry lookup that imports a client's module (and its SDK) only where
it is used. What only paid requests need (the SDK clients the API providers make, what a
5xx says of a paid request) is `workflow_scripts.paid`'s.

Kept light (no HTTP library, no SDK): the workflow reads it when it starts.
"""

from __future__ import annotations

import enum
import importlib
import inspect
import json
import re


class ServiceError(Exception):
    """The service itself refuses or fails (a bad key, a rejected request, a retired model,
    a server still failing after every attempt): the job fails and writes nothing."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


class Answer(enum.Enum):
    """What an HTTP error status says about the request."""

    RETRY = "retry"  # 408, 429, 5xx: not served now; worth another attempt later
    KEY = "key"  # 401, 403, a refused API key: no request with this key can succeed
    NOT_FOUND = "not found"  # 404: the model, or the id asked about, is unknown
    REQUEST = "request"  # any other 4xx: about this request alone


def answer_of(status: int, message: str = "") -> Answer:
    """The kind of an HTTP error answer (its status, and its message for a refused key)."""
    if status in (408, 429) or status >= 500:
        return Answer.RETRY
    if status in (401, 403) or re.search(r"api[ _]?key", message or "", re.IGNORECASE):
        return Answer.KEY
    return Answer.NOT_FOUND if status == 404 else Answer.REQUEST


def retry_after(headers, body) -> float | None:
    """Seconds the server asked to wait: Retry-After, Google's RetryInfo (`retryDelay`), or
    'retry in Xs' in its message (`body`: the message, or the error's JSON)."""
    text = body if isinstance(body, str) else json.dumps(body, default=str)
    sources = (
        (r"^\s*(\d+(?:\.\d+)?)\s*$", (headers or {}).get("retry-after", "")),
        (r'"retryDelay":\s*"(\d+(?:\.\d+)?)s"', text),
        (r"retry in (\d+(?:\.\d+)?)\s*s", text),
    )
    for pattern, source in sources:
        if match := re.search(pattern, source, re.IGNORECASE):
            return float(match[1])
    return None


def is_post(request) -> bool:
    return request.method == "POST"


def request_hooks(before, sends=is_post) -> dict:
    """httpx `event_hooks` that call `before()` (None: no hook; awaited where it is a
    coroutine function, for an async client) right before each request `sends(request)`
    picks is sent: the SDK's own work on a request (seconds on a busy host) comes first, so
    a shared rate limit counts a request when it goes out."""
    if before is None:
        return {}
    if inspect.iscoroutinefunction(before):

        async def hook(request) -> None:
            if sends(request):
                await before()

    else:

        def hook(request) -> None:
            if sends(request):
                before()

    return {"request": [hook]}


def registered(package: str, modules: dict[str, str], name: str, attribute: str):
    """`attribute` of the module registered as `name` (a key of `modules`, whose values are
    modules of `package`), imported now: a job imports only its own client's SDK."""
    return getattr(importlib.import_module(f"{package}.{modules[name]}"), attribute)
