"""A rate limit shared by every process of a run that calls one API: the judge's
(`judge.requests_per_minute`, `judge.tokens_per_minute`) and each video API model's
submissions (`video_api.requests_per_minute`): one quota, however many jobs call at once.

A sliding window in a file: each request sent and each reply's tokens is one line,
`<unix time> <requests> <tokens>`, and every process reads, prunes and rewrites it under
an exclusive `fcntl.flock` (one host, or a shared file system whose locks work). A
request waits until the last window holds fewer than the limit of requests and of tokens.
Tokens are known only when a reply comes, so the window may go over its token limit by the
tokens of the requests in flight when it fills; requests after them wait. A request is counted right
before its HTTP request is sent (the backends' request hook: the SDK's own work on it,
seconds on a loaded host, comes first), and the window is 2 s longer than the quota's
(`window_s`): slack for the rest of its way to the server. A second, one-second window
holds requests to twice the quota's mean rate: a free window is not spent in one burst
(hundreds of requests a second at short replies), whose echo one window later would meet
the server's count of the first burst, late on a loaded server, and draw 429s.
"""

from __future__ import annotations

import asyncio
import fcntl
import time
from pathlib import Path

SLACK_S = 2.0
BURST = 2.0  # at most this many times the quota's mean rate in any second


def _entry(line: str) -> tuple[float, float, float] | None:
    """A line's (time, requests, tokens); None for a damaged line (a hand edit, a full
    disk), which the rewrite then drops: the window only forgets that entry."""
    try:
        when, requests, tokens = map(float, line.split())
    except ValueError:
        return None
    return when, requests, tokens


class SharedRateLimit:
    """At most `requests` requests and `tokens` tokens (None: no limit) in any `window_s`,
    and at most BURST x `requests` / `window_s` requests in any second, across every
    process that uses the same `path`."""

    def __init__(self, path: str | Path, requests=None, tokens=None, window_s: float = 60.0):
        self.path, self.window = Path(path), window_s + SLACK_S
        # (column of an entry, its limit, the seconds it counts back)
        self.limits = [(1, requests, self.window), (2, tokens, self.window)]
        if requests:
            self.limits.append((1, max(1, round(BURST * requests / window_s)), 1.0))

    async def acquire(self) -> None:
        """Waits until one more request fits the limits, and counts it."""
        while (wait := self._add(1, 0)) > 0:
            await asyncio.sleep(wait)

    def acquire_blocking(self) -> None:
        """`acquire` for synchronous callers (the video APIs' SDK clients)."""
        while (wait := self._add(1, 0)) > 0:
            time.sleep(wait)

    def spend(self, tokens: int) -> None:
        """Counts a reply's tokens (only where tokens are limited)."""
        if self.limits[1][1] and tokens:
            self._add(0, tokens, force=True)

    def _add(self, requests: int, tokens: int, force: bool = False) -> float:
        """Adds an entry and returns 0 if it fits (or `force`), else the seconds until it may."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "a+", encoding="ascii") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)  # released when the file closes
            now = time.time()
            handle.seek(0)
            entries = [entry for line in handle if (entry := _entry(line))]
            entries = [entry for entry in entries if entry[0] > now - self.window]
            wait = 0.0 if force else self._wait(entries, now)
            if wait == 0.0:
                entries.append((now, requests, tokens))
            handle.seek(0)
            handle.truncate()
            handle.writelines(f"{t:.3f} {r:g} {k:g}\n" for t, r, k in entries)
        return wait

    def _wait(self, entries: list[tuple], now: float) -> float:
        """0 if every limit leaves room, else when the oldest entries that fill a limit's
        span will have left it."""
        wait = 0.0
        for column, limit, span in self.limits:
            counted = [entry for entry in entries if entry[0] > now - span]
            used = sum(entry[column] for entry in counted)
            if not limit or used < limit:
                continue
            for entry in counted:  # oldest first
                used -= entry[column]
                if used < limit:
                    wait = max(wait, entry[0] + span - now)
                    break
        return wait
