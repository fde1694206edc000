"""What the clients of remote services share (the judge's VLM backends, the video API
providers): the service's failure, reading an HTTP error answer, the request hook that
paces sends, the registry lookup that imports a client's module (and its SDK) only where it
is used, and the SDK clients more than one provider makes.

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


def may_have_been_taken(status: int) -> bool:
    """Whether an HTTP error answer to a paid request (an image, a video submission) leaves
    open that the service took it: any 5xx (500, 502, 503, 504, ...) comes after the body
    was sent, and a gateway's 502/504 may come after the model behind it took the request.
    None of the providers documents a 5xx as "not processed" (OpenAI's and Gemini's
    overloaded 503 say only "try again later"), so none is sent again without the user's
    word. A 408 or 429 is an answer that the request was not served: sent again."""
    return status >= 500


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


def openai_client(key: str, base_url: str | None, hooks: dict, timeout_s: float):
    """An openai SDK client (the SDK imported now: a job's import only) without retries of its
    own (the caller decides what is sent again), its httpx client given `hooks`."""
    import openai

    return openai.OpenAI(
        api_key=key,
        base_url=base_url,
        max_retries=0,
        timeout=timeout_s,
        http_client=openai.DefaultHttpxClient(event_hooks=hooks),
    )


def ark_client(key: str, base_url: str | None, hooks: dict, timeout_s: float):
    """(a BytePlus Ark runtime client, its httpx client): the SDK imported now (a job's
    import only), without retries of its own, the httpx client given `hooks`."""
    import httpx
    from byteplussdkarkruntime import Ark

    http = httpx.Client(event_hooks=hooks, timeout=timeout_s, follow_redirects=True)
    endpoint = {"base_url": base_url} if base_url else {}
    client = Ark(api_key=key, max_retries=0, timeout=timeout_s, http_client=http, **endpoint)
    return client, http


DASHSCOPE_INTERNATIONAL = (
    "https://dashscope-intl.aliyuncs.com/api/v1"  # Singapore; keys are regional
)
DASHSCOPE_REFUSALS = ("DataInspection", "IPInfringement")  # in an error code: a refusal


def dashscope_refusal(code: str | None) -> bool:
    """Whether Model Studio's error `code` is a refusal (its content inspection, a policy)."""
    return any(word in (code or "") for word in DASHSCOPE_REFUSALS)


def dashscope_client(key: str, base_url: str | None, hooks: dict, timeout_s: float):
    """A dashscope 2.0 client (the SDK imported now: a job's import only) on Model Studio's
    international endpoint unless `base_url`, without retries of its own, its httpx client
    given `hooks`."""
    from dashscope.v2 import Client

    client = Client(
        api_key=key,
        base_url=base_url or DASHSCOPE_INTERNATIONAL,
        timeout=timeout_s,
        max_retries=0,
    )
    client.transport.http_client.event_hooks = hooks
    return client
