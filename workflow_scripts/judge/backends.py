"""The VLM backends behind `VLMClient`: Gemini through google-genai (`gemini`), and any
OpenAI-compatible endpoint such as vLLM (`openai_compatible`). Each turns a `Request` into
the reply's text, its token usage and the model version the server reports, and raises
`Fault` for what is worth another attempt. Both cap the reply at MAX_OUTPUT_TOKENS, as the
official judge. A job imports only its backend's SDK (`backend`): a start-up cost per job.
Both send through an httpx client of ours whose request hook awaits `before_send` (the
shared rate limit), so that a request is counted when it goes out, not when the SDK
starts building it (`common.http.request_hooks`)."""

from __future__ import annotations

from workflow_scripts.common.http import Answer, ServiceError, answer_of, registered

MAX_OUTPUT_TOKENS = 8000
USAGE_KEYS = ("prompt", "candidates", "thoughts", "cached", "total")
BLOCKED = {"SAFETY", "PROHIBITED_CONTENT", "BLOCKLIST", "SPII", "RECITATION", "IMAGE_SAFETY"}


class JudgeCallError(Exception):
    """A call that failed for good; `reason` says what finally failed, `attempts` how many
    requests it sent and `usage` the tokens their replies reported (set by the client)."""

    def __init__(self, reason: str, attempts: int = 1, usage: dict | None = None):
        super().__init__(reason)
        self.reason, self.attempts, self.usage = reason, attempts, usage or {}


class Fault(Exception):
    """One failed attempt worth another; `usage` is what it cost, `retry_after` a hint.

    `service`: the fault is the service's (rate limit, server error, no connection), not
    the reply's; if the last attempt fails so, the call raises `ServiceError`.
    """

    def __init__(
        self,
        reason: str,
        retry_after: float | None = None,
        usage: dict | None = None,
        service: bool = False,
    ):
        super().__init__(reason)
        self.reason, self.retry_after, self.usage = reason, retry_after, usage
        self.service = service


def usage_counts(prompt=0, candidates=0, thoughts=0, cached=0, total=0) -> dict:
    """Token counts under USAGE_KEYS; None (not reported) counts as 0."""
    counts = (prompt, candidates, thoughts, cached, total)
    return {key: count or 0 for key, count in zip(USAGE_KEYS, counts, strict=True)}


def name_of(value) -> str:
    return str(getattr(value, "value", value))


def describe_error(error: Exception) -> str:
    """'ReadTimeout: timed out', or the bare class name when the message is empty."""
    return f"{type(error).__name__}: {error}".rstrip(": ")


def http_fault(code: int, message: str, hint: float | None) -> Exception:
    """408, 429 and 5xx are worth another attempt; 401, 403, 404 and a refused key fail the
    service at once; any other 4xx is about this request alone."""
    reason = f"HTTP {code}: {message}"[:300]
    answer = answer_of(code, message)
    if answer is Answer.RETRY:
        return Fault(reason, hint, service=True)
    return JudgeCallError(reason) if answer is Answer.REQUEST else ServiceError(reason)


BACKENDS = {"gemini": "gemini", "openai": "openai_compatible"}  # modules of this package


def backend(name: str) -> type:
    """The backend class `name` (a key of BACKENDS), importing only its SDK."""
    return registered("workflow_scripts.judge", BACKENDS, name, "Backend")
