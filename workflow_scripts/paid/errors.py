"""What a paid request's failure says, in both API branches: `Retry` (worth another
attempt, or unsure: it may have been taken) and `Refused` (the service refused it, billed
or not), and the one reading of an HTTP error answer to a paid request (`error_answer`).
Kept light: no HTTP library at import (the workflow reads it when it starts)."""

from __future__ import annotations

from workflow_scripts.common.http import Answer, ServiceError, answer_of, retry_after


class Retry(Exception):
    """Worth another attempt later (HTTP 408, 429, 5xx, a dropped connection): `after`
    seconds, the server's hint when it gave one. `unsure`: a request that may have been
    taken (a timeout or a connection dropped after it was sent, a 5xx answer, an answer
    that could not be read): a paid one is never sent again on its own; a GET may be."""

    def __init__(self, reason: str, after: float | None = None, unsure: bool = False) -> None:
        super().__init__(reason)
        self.after, self.unsure = after, unsure

    @classmethod
    def unanswered(cls, error: BaseException) -> Retry:
        """A request left unanswered (an httpx or httpx2 transport error, the SDKs' own
        clients): not taken where its connection never opened (a connect error or connect
        timeout), else unsure: it may have reached the server."""
        import httpx
        import httpx2

        never = (
            httpx.ConnectError,
            httpx.ConnectTimeout,
            httpx2.ConnectError,
            httpx2.ConnectTimeout,
        )
        if isinstance(error, never):
            return cls(f"connection failed: {type(error).__name__}: {error}")
        return cls(f"no answer: {type(error).__name__}", unsure=True)


class Refused(Exception):
    """The service refused the request (a safety filter, a policy): `reason` is the
    instance's recorded error (`refused: ...`); `billed` says whether the refusal is paid
    (a video submission refused outright makes no operation and is not; an image model's
    refusal is a finished answer and is)."""

    def __init__(self, reason: str, *, billed: bool) -> None:
        super().__init__(reason)
        self.reason = reason if reason.startswith("refused: ") else f"refused: {reason}"
        self.billed = billed


def may_have_been_taken(status: int) -> bool:
    """Whether an HTTP error answer to a paid request (an image, a video submission) leaves
    open that the service took it: any 5xx (500, 502, 503, 504, ...) comes after the body
    was sent, and a gateway's 502/504 may come after the model behind it took the request.
    None of the providers documents a 5xx as "not processed" (OpenAI's and Gemini's
    overloaded 503 say only "try again later"), so none is sent again without the user's
    word. A 408 or 429 is an answer that the request was not served: sent again."""
    return status >= 500


def reason_of(status: int, message: str, code: str | None = None) -> str:
    """An HTTP error answer as a job's reason: `HTTP <status> [<code>]: <message>`, cut short."""
    return f"HTTP {status}{f' {code}' if code else ''}: {message}"[:300]


def error_answer(status: int, message: str, headers=None, code: str | None = None,
                 details=None) -> Exception:  # fmt: skip
    """The exception for an HTTP error answer to a paid request (either branch): `Retry`
    for 408, 429 (not taken; the server's hint from its headers, `details` or message) and
    unsure for a 5xx (`may_have_been_taken`); else `ServiceError` (an answer that refuses
    the request: not taken)."""
    reason = reason_of(status, message, code)
    if answer_of(status, message) is Answer.RETRY:
        after = retry_after(headers, details or message)
        return Retry(reason, after, unsure=may_have_been_taken(status))
    return ServiceError(reason)
