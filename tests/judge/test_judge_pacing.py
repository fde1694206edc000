"""The shared rate limit (`judge.requests_per_minute`, `tokens_per_minute`): one quota for
every process of a run. The window is scaled down from 60 s to keep the tests short."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.fake_vlm import FakeVLM
from workflow_scripts.common.pacing import SharedRateLimit

REPO = Path(__file__).resolve().parents[2]
WINDOW_S, LIMIT, JOBS, CALLS = 3.0, 6, 4, 6

# One judge job's worth of client: every call at once through a real VLMClient and SDK.
JOB = """
import asyncio, json, sys
from workflow_scripts.judge.client import Part, Request, VLMClient
config, cache, tag = json.loads(sys.argv[1]), sys.argv[2], sys.argv[3]
schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
async def main():
    async with VLMClient(config, "test-key", cache) as client:
        texts = [f"job {tag}, call {i}" for i in range(int(sys.argv[4]))]
        requests = [Request("probe", (Part.of_text(text),), schema) for text in texts]
        await asyncio.gather(*map(client.ask, requests))
asyncio.run(main())
"""


def most_in_any_window(times: list[float], window: float) -> int:
    """The most of `times` that fall in any half-open span of `window` seconds."""
    times = sorted(times)
    return max(sum(t <= u < t + window for u in times) for t in times)


def run_jobs(fake: FakeVLM, tmp_path, backend="gemini", **limits) -> list[subprocess.Popen]:
    url = fake.url if backend == "gemini" else fake.url + "/v1"
    config = {"backend": backend, "model": "fake", "base_url": url, "max_concurrency": 8}
    config.update(max_attempts=9, backoff_initial_s=0.05, rate_window_s=WINDOW_S, **limits)
    jobs = [
        subprocess.Popen(
            [sys.executable, "-c", JOB, json.dumps(config), str(tmp_path / "cache"), str(k)]
            + [str(CALLS)],
            cwd=REPO,
        )
        for k in range(JOBS)
    ]
    return [job.wait(timeout=120) for job in jobs]


@pytest.mark.parametrize("backend", ["gemini", "openai"])
def test_concurrent_jobs_never_exceed_the_limit_in_any_window(tmp_path, backend):
    """4 processes x 6 calls in flight against a server that allows 6 in any 3 s: paced
    (in either SDK's HTTP request hook), no window ever holds more than 6 requests and the
    server refuses none."""
    with FakeVLM(delay=0.2, rate_limit=(LIMIT, WINDOW_S)) as fake:
        assert run_jobs(fake, tmp_path, backend, requests_per_minute=LIMIT) == [0] * JOBS
    assert len(fake.requests) == JOBS * CALLS and fake.rate_limited == 0
    assert most_in_any_window([r.at for r in fake.requests], WINDOW_S) == LIMIT


def test_without_the_limit_the_same_jobs_provoke_429s_and_honour_their_hints(tmp_path):
    with FakeVLM(delay=0.2, rate_limit=(LIMIT, WINDOW_S)) as fake:
        assert run_jobs(fake, tmp_path) == [0] * JOBS  # the retry hints get every call through
    assert fake.rate_limited > 0
    assert most_in_any_window([r.at for r in fake.requests], WINDOW_S) > LIMIT
    accepted = [r.at for r in fake.requests if r.status == 200]
    assert len(accepted) == JOBS * CALLS
    assert most_in_any_window(accepted, WINDOW_S) <= LIMIT


@pytest.mark.parametrize("tokens", [100, 99])
def test_a_request_waits_while_the_window_holds_the_token_limit(tmp_path, tokens):
    """Two clients of one file: 100 tokens spent by one hold the other's next request back
    for a window when the limit is 100, not when it is 101."""
    path, window = tmp_path / "rate_window", 0.2
    SharedRateLimit(path, tokens=101, window_s=window).spend(tokens)

    async def acquire() -> float:
        start = time.monotonic()
        await SharedRateLimit(path, tokens=100, window_s=window).acquire()
        return time.monotonic() - start

    waited = asyncio.run(acquire())
    assert (waited > window) == (tokens == 100), waited


def test_requests_go_at_most_twice_the_quota_rate_in_any_second(tmp_path):
    """600 a minute: an empty window still lets only 20 requests go in any second (twice
    the mean rate), so a free window is spread over half of it, not sent in one burst."""
    limit = SharedRateLimit(tmp_path / "rate_window", requests=600, window_s=60.0)

    async def acquire_all() -> list[float]:
        times = []
        for _ in range(45):
            await limit.acquire()
            times.append(time.monotonic())
        return times

    times = asyncio.run(acquire_all())
    counted = [float(line.split()[0]) for line in limit.path.read_text().splitlines()]
    assert len(counted) == 45 and most_in_any_window(counted, 0.99) == 20  # (ms in the file)
    assert times[-1] - times[0] >= 2.0  # 45 requests take more than two seconds
