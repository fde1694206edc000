"""What a paid request's failure says, in both API branches: `Retry` (worth another
attempt, or unsure: it may have been taken) and `Refused` (the service refused it, billed
or not). Kept light: no HTTP library at import (the workflow reads it when it starts)."""

from __future__ import annotations


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
