"""The judge's VLM client (real google-genai and openai SDKs against FakeVLM) and frames."""

from __future__ import annotations

import asyncio
import io
import logging
import os
import time

import decord
import imageio.v2 as imageio
import numpy as np
import pytest
from PIL import Image

from tests.support.fake_vlm import (
    BLOCKED,
    EMPTY,
    INVALID_JSON,
    PROMPT_BLOCKED,
    RESET,
    FakeVLM,
    Script,
    fake_vlm_fixture,  # noqa: F401  (the `fake_vlm` fixture)
    http_error,
    stall,
    version,
)
from workflow_scripts.judge import client as client_module
from workflow_scripts.judge import frames
from workflow_scripts.judge.client import JudgeCallError, Part, Request, ServiceError, VLMClient

ENV = "FAKE_VLM_API_KEY"
KEY = "sk-test-5ecret-never-written"
SCHEMA = {
    "type": "object",
    "properties": {
        "tier": {"type": "integer", "minimum": 0, "maximum": 2},
        "reasoning": {"type": "string"},
    },
    "required": ["tier", "reasoning"],
}
JPEG = frames.to_jpeg(Image.new("RGB", (8, 8), (200, 30, 30)), 8)
TIMEOUT_S = 0.75  # the client's read timeout where a reply stalls
FAULTS = {  # id: (script, what the final reason says, what it finally raises)
    "429": (http_error(429), "HTTP 429", ServiceError),
    "500": (http_error(500), "HTTP 500", ServiceError),
    "503": (http_error(503), "HTTP 503", ServiceError),
    "reset": (RESET, "transport error", ServiceError),
    "timeout": (stall(1.5), "Timeout", ServiceError),  # past TIMEOUT_S
    "invalid-json": (INVALID_JSON, "reply is not valid JSON", JudgeCallError),
    "missing-field": (Script(text='{"tier": 2}'), "does not match the schema", JudgeCallError),
    "empty": (EMPTY, "empty candidate list", JudgeCallError),
    "blocked": (BLOCKED, "blocked", JudgeCallError),
    "prompt-blocked": (PROMPT_BLOCKED, "blocked", JudgeCallError),
}


@pytest.fixture(autouse=True)
def api_key(monkeypatch):
    monkeypatch.setenv(ENV, KEY)


def make_client(backend: str, fake: FakeVLM, cache_dir, **overrides) -> VLMClient:
    config = {
        "backend": backend,
        "model": "judge-model",
        "base_url": fake.url if backend == "gemini" else fake.url + "/v1",
        "api_key_env": ENV,
        "max_concurrency": 4,
        "max_attempts": 3,
        "timeout_s": 5.0,  # a reply's time on a loaded machine; the timeout fault's: TIMEOUT_S
        "backoff_initial_s": 0.01,
        "backoff_max_s": 0.05,
        **overrides,
    }
    return VLMClient.from_config(config, cache_dir)


def judge_request(text: str = "Judge the clip.", image: bytes = JPEG, **fields) -> Request:
    fields = {"kind": "completeness", "schema": SCHEMA, "system": "You are a judge.", **fields}
    return Request(parts=(Part.of_text(text), Part.of_image(image)), **fields)


def ask(client: VLMClient, request: Request, validate=None):
    """One ask in its own event loop, closing the client's connections before it ends."""

    async def run():
        async with client:
            return await client.ask(request, validate)

    return asyncio.run(run())


@pytest.fixture(params=["gemini", "openai"])
def backend(request) -> str:
    return request.param


@pytest.fixture
def client(backend, fake_vlm, tmp_path) -> VLMClient:
    return make_client(backend, fake_vlm, tmp_path / "cache")


def test_good_reply_parses_and_validates(client, fake_vlm, backend):
    fake_vlm.responder = lambda received: {"tier": 2, "reasoning": "solved"}
    reply = ask(client, judge_request())
    assert reply.data == {"tier": 2, "reasoning": "solved"}
    assert (reply.cached, reply.attempts) == (False, 1)
    assert set(reply.usage) == {"prompt", "candidates", "thoughts", "cached", "total"}
    assert reply.usage["thoughts"] == 5 and reply.usage["total"] > reply.usage["prompt"] > 0
    [seen] = fake_vlm.requests
    assert (seen.model, seen.texts, seen.images) == ("judge-model", ["Judge the clip."], [JPEG])
    assert (seen.schema, seen.system, seen.api_key) == (SCHEMA, "You are a judge.", KEY)
    # the official judge's output cap, and the version the server says replied
    cap = seen.body["generationConfig"]["maxOutputTokens"] if backend == "gemini" else None
    assert (cap or seen.body.get("max_tokens")) == 8000
    assert reply.model_version == version("judge-model")
    assert ask(client, judge_request()).model_version == version("judge-model")  # cached


def fault_client(backend, fake_vlm, tmp_path, fault) -> VLMClient:
    """The client a fault meets: one that gives up on a stalled reply at TIMEOUT_S."""
    timeout = {"timeout_s": TIMEOUT_S} if fault == "timeout" else {}
    return make_client(backend, fake_vlm, tmp_path / "cache", **timeout)


@pytest.mark.parametrize("fault", FAULTS)
def test_fault_then_success(backend, fake_vlm, tmp_path, fault):
    client = fault_client(backend, fake_vlm, tmp_path, fault)
    fake_vlm.script(FAULTS[fault][0])
    reply = ask(client, judge_request())
    assert reply.attempts == 2 and len(fake_vlm.requests) == 2
    assert reply.data == {"tier": 0, "reasoning": "ok"}


@pytest.mark.parametrize("fault", FAULTS)
def test_fault_every_time_fails_the_call_or_the_service(backend, fake_vlm, tmp_path, fault):
    """A reply that stays unusable fails the call (the instance's error); a rate limit,
    server error or lost connection that stays fails the service (the job)."""
    client = fault_client(backend, fake_vlm, tmp_path, fault)
    script, reason, raised = FAULTS[fault]
    fake_vlm.script(*[script] * 3)
    with pytest.raises(raised) as error:
        ask(client, judge_request())
    assert type(error.value) is raised
    assert reason in error.value.reason and "after 3 attempt(s)" in error.value.reason
    assert len(fake_vlm.requests) == 3
    assert not (client.cache_dir / "completeness").exists()


def test_bad_request_fails_the_call_at_once(client, fake_vlm):
    fake_vlm.script(http_error(400, "bad request"), http_error(400, "bad request"))
    with pytest.raises(JudgeCallError, match=r"HTTP 400: bad request \(after 1 attempt"):
        ask(client, judge_request())
    assert len(fake_vlm.requests) == 1


@pytest.mark.parametrize(
    ("code", "message"),
    [(401, "unauthenticated"), (403, "permission denied"), (400, "API key not valid")],
)
def test_refused_key_costs_one_call_and_stops_every_other(backend, tmp_path, code, message):
    """Six calls at once: the first goes alone, is refused, and no other is sent."""
    with FakeVLM() as fake:
        fake.script(*[http_error(code, message)] * 6)
        client = make_client(backend, fake, tmp_path)

        async def ask_all():
            async with client:
                return await asyncio.gather(*(client.ask(judge_request(str(i))) for i in range(6)))

        with pytest.raises(ServiceError, match=f"HTTP {code}: {message}"):
            asyncio.run(ask_all())
        assert len(fake.requests) == 1


def test_service_failure_stops_the_calls_in_flight(backend, tmp_path):
    """After one good reply, four calls go out at once: one is refused after 0.5 s, three
    stall for 20 s. The refusal ends the stalled ones at once, and the two calls still
    waiting are never sent."""
    with FakeVLM() as fake:
        client = make_client(backend, fake, tmp_path, timeout_s=30)
        fake.script(Script(), http_error(403, "permission denied", delay=0.5), *[stall(20)] * 3)

        async def ask_all():
            async with client:
                await client.ask(judge_request("first"))
                return await asyncio.gather(*(client.ask(judge_request(str(i))) for i in range(6)))

        started = time.monotonic()
        with pytest.raises(ServiceError, match="HTTP 403"):
            asyncio.run(ask_all())
        assert time.monotonic() - started < 5
        assert len(fake.requests) == 1 + 4


def test_usage_sums_every_paid_attempt(client, fake_vlm):
    fake_vlm.script(INVALID_JSON, http_error(503))
    reply = ask(client, judge_request())
    assert reply.attempts == 3 and reply.usage["thoughts"] == 10  # two replies, 5 each


@pytest.mark.parametrize(
    ("backend", "script"),
    [
        ("gemini", http_error(429, retry_delay=0.3)),
        ("gemini", http_error(429, "Quota exceeded. Please retry in 0.3s.")),
        ("gemini", http_error(429, retry_after=0.3)),
        ("openai", http_error(429, retry_after=0.3)),
        ("openai", http_error(429, "Rate limited, please retry in 0.3s.")),
    ],
)
def test_retry_hint_is_honoured(client, fake_vlm, script):
    fake_vlm.script(script)
    assert ask(client, judge_request()).attempts == 2
    first, second = fake_vlm.requests
    assert second.at - first.at >= 0.3  # the backoff alone would wait ~0.02 s


def test_retry_hint_is_capped(client, fake_vlm, monkeypatch):
    monkeypatch.setattr(client_module, "RETRY_HINT_CAP_S", 0.05)
    fake_vlm.script(http_error(429, retry_delay=30))
    started = time.monotonic()
    assert ask(client, judge_request()).attempts == 2
    assert time.monotonic() - started < 5


def test_validate_callback_rejects_and_retries(client, fake_vlm):
    tier = {1: 0}  # the first request's reply is tier 0, later ones tier 2
    fake_vlm.responder = lambda received: {
        "tier": tier.get(len(fake_vlm.requests), 2),
        "reasoning": "r",
    }

    def tier_two(data):
        if data["tier"] != 2:
            raise ValueError("expected tier 2")

    reply = ask(client, judge_request(), tier_two)
    assert (reply.data["tier"], reply.attempts) == (2, 2)
    with pytest.raises(JudgeCallError, match="reply rejected: expected tier 2"):
        ask(client, judge_request("another"), lambda data: tier_two({"tier": 0}))


def test_cache_hit_makes_no_call_and_one_byte_does(client, fake_vlm):
    first = ask(client, judge_request())
    again = ask(client, judge_request())
    assert len(fake_vlm.requests) == 1
    assert (again.data, again.usage, again.cached, again.attempts) == (
        first.data,
        first.usage,
        True,
        0,
    )
    changed = JPEG[:-1] + bytes([JPEG[-1] ^ 1])
    assert not ask(client, judge_request(image=changed)).cached  # in a third event loop
    assert len(fake_vlm.requests) == 2
    assert len(list((client.cache_dir / "completeness").glob("*.json"))) == 2


@pytest.mark.parametrize(
    ("overrides", "fields", "calls"),
    [
        ({"model": "other-model"}, {}, 1),
        ({"temperature": 0.5}, {}, 1),
        ({}, {"system": "Be strict."}, 1),
        ({}, {"schema": {**SCHEMA, "description": "v2"}}, 1),
        ({}, {"kind": "window"}, 1),
        ({"max_concurrency": 1, "max_attempts": 5, "timeout_s": 9.0}, {}, 0),
    ],
)
def test_cache_key_covers_what_determines_the_answer(
    backend, fake_vlm, tmp_path, overrides, fields, calls
):
    ask(make_client(backend, fake_vlm, tmp_path), judge_request())
    ask(make_client(backend, fake_vlm, tmp_path, **overrides), judge_request(**fields))
    assert len(fake_vlm.requests) == 1 + calls


def test_endpoint_is_not_part_of_the_cache_key(backend, fake_vlm, tmp_path):
    first = make_client(backend, fake_vlm, tmp_path)
    ask(first, judge_request())
    url = first.config["base_url"].replace("127.0.0.1", "localhost")
    assert ask(make_client(backend, fake_vlm, tmp_path, base_url=url), judge_request()).cached
    assert len(fake_vlm.requests) == 1


def test_cache_is_written_atomically(client, monkeypatch):
    renames = []
    real_replace = os.replace

    def spy(source, target):
        renames.append((str(source), str(target)))
        real_replace(source, target)

    monkeypatch.setattr(os, "replace", spy)
    ask(client, judge_request())
    [(source, target)] = renames
    assert os.path.dirname(source) == os.path.dirname(target) and source != target
    assert target == str(client.cache_path(judge_request()))

    def crash(source, target):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError, match="disk full"):
        ask(client, judge_request("new"))
    assert not client.cache_path(judge_request("new")).exists()
    left = {p.name for p in client.cache_dir.rglob("*")}
    assert left == {"completeness", os.path.basename(target)}


def test_key_is_sent_but_never_written_or_logged(client, fake_vlm, caplog):
    caplog.set_level(logging.DEBUG)
    ask(client, judge_request())
    fake_vlm.script(http_error(503, f"key {KEY} over quota"), http_error(403, f"key {KEY} denied"))
    with pytest.raises(ServiceError) as error:
        ask(client, judge_request("other"))
    assert KEY not in str(error.value) and "***" in error.value.reason
    assert {seen.api_key for seen in fake_vlm.requests} == {KEY}
    for path in client.cache_dir.rglob("*"):
        assert path.is_dir() or KEY.encode() not in path.read_bytes()
    assert all(KEY not in record.getMessage() for record in caplog.records)
    ours = [r.getMessage() for r in caplog.records if r.name == client_module.__name__]
    assert any("completeness" in m and "cache miss" in m for m in ours)


def test_missing_key_names_the_variable(monkeypatch, tmp_path):
    monkeypatch.delenv(ENV)
    with pytest.raises(ValueError, match=ENV):
        VLMClient.from_config({"api_key_env": ENV}, tmp_path)


def test_concurrency_is_capped(backend, tmp_path):
    with FakeVLM(delay=0.2) as fake:
        client = make_client(backend, fake, tmp_path, max_concurrency=2)

        async def ask_all():
            async with client:
                return await asyncio.gather(*(client.ask(judge_request(str(i))) for i in range(6)))

        started = time.monotonic()
        replies = asyncio.run(ask_all())
        elapsed = time.monotonic() - started
    assert len(replies) == 6 and fake.max_in_flight == 2
    assert elapsed >= 3 * 0.2


# Frames ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def video(tmp_path_factory):
    """2 s at 16 fps, 64x36; frame i is a flat grey of level 8 i."""
    path = tmp_path_factory.mktemp("video") / "clip.mp4"
    with imageio.get_writer(path, fps=16, quality=10, macro_block_size=1) as out:
        for i in range(32):
            out.append_data(np.full((36, 64, 3), 8 * i, dtype=np.uint8))
    return path


@pytest.mark.parametrize(
    ("fps", "start", "end", "indices"),
    [
        (2, 0.0, None, [0, 8, 16, 24, 31]),
        (4, 0.0, None, [*range(0, 32, 4), 31]),
        (8, 0.0, None, [*range(0, 32, 2), 31]),
        (8, 0.5, 1.0, [8, 10, 12, 14, 16]),
        (32, 0.0, None, list(range(32))),
    ],
)
def test_sample_frames(video, fps, start, end, indices):
    sampled = frames.sample_frames(video, fps, start, end)
    assert [f.index for f in sampled] == indices
    assert [f.time for f in sampled] == [i / 16 for i in indices]
    for frame in sampled:
        pixels = np.asarray(Image.open(io.BytesIO(frame.jpeg)))
        assert pixels.shape == (36, 64, 3)  # never enlarged to 512
        assert abs(pixels.mean() - 8 * frame.index) < 4


# By hand from the official rule: t_k = k / fps for k < n, n = round(duration x fps) + 1,
# the last t set to duration - 1/rate (the last frame); frame = round(t x rate).
# 81 @ 16 fps: 5.0625 s, last t 5.0 -> 80.   121 @ 24: 5.0417 s, last t 5.0 -> 120.
# 145 @ 24: 6.0417 s, last t 6.0 -> 144.    92 @ 16 (5.75 s): last t 5.6875 -> 91.
INDEX_TABLE = {
    (81, 16, 2): [0, 8, 16, 24, 32, 40, 48, 56, 64, 72, 80],  # n = 11
    (81, 16, 4): [0, 4, 8, 12, 16, 20, 24, 28, 32, 36, 40, 44, 48, 52, 56, 60, 64, 68, 72, 76, 80],
    (81, 16, 8): [*range(0, 80, 2), 80],  # n = round(40.5) + 1 = 41: 0, 2, ..., 78, then 80
    (121, 24, 2): [0, 12, 24, 36, 48, 60, 72, 84, 96, 108, 120],  # n = 11
    (121, 24, 4): [*range(0, 120, 6), 120],  # n = 21
    (121, 24, 8): [*range(0, 120, 3), 120],  # n = 41
    (145, 24, 2): [0, 12, 24, 36, 48, 60, 72, 84, 96, 108, 120, 132, 144],  # n = 13
    (145, 24, 4): [*range(0, 144, 6), 144],  # n = 25
    (145, 24, 8): [*range(0, 144, 3), 144],  # n = 49
    # 5.75 s: 11.5 samples' worth at 2 fps -> n = 13: t = 0 .. 5.5, then 5.6875 (the old
    # sampler stopped at 5.5, frame 88, and missed the last frame)
    (92, 16, 2): [0, 8, 16, 24, 32, 40, 48, 56, 64, 72, 80, 88, 91],
    (92, 16, 4): [*range(0, 92, 4), 91],  # n = 24: t = 0 .. 5.5 (frame 88), then 91
    (92, 16, 8): [*range(0, 92, 2), 91],  # n = 47: t = 0 .. 5.625 (frame 90), then 91
}


@pytest.mark.parametrize(("count", "rate", "fps"), INDEX_TABLE)
def test_frame_indices_match_the_official_sampler(count, rate, fps):
    indices = frames.frame_indices(count, rate, fps)
    assert indices == INDEX_TABLE[count, rate, fps]
    assert indices[-1] == count - 1


def test_jpegs_are_quality_88():
    image = Image.fromarray(np.random.default_rng(0).integers(0, 256, (90, 160, 3), np.uint8))
    out = io.BytesIO()
    image.save(out, format="JPEG", quality=88)
    assert frames.to_jpeg(image, 512) == out.getvalue()


def test_sample_frames_opens_once_and_reads_one_batch(video, monkeypatch):
    calls = []

    class CountingReader(decord.VideoReader):
        def __init__(self, *args, **kwargs):
            calls.append("open")
            super().__init__(*args, **kwargs)

        def get_batch(self, indices):
            calls.append("batch")
            return super().get_batch(indices)

    monkeypatch.setattr(decord, "VideoReader", CountingReader)
    sampled = frames.sample_frames(video, 8, long_side=32)
    assert calls == ["open", "batch"] and len(sampled) == 17
    assert Image.open(io.BytesIO(sampled[0].jpeg)).size == (32, 18)


def test_a_judgement_decodes_each_frame_once_whatever_the_passes(video, monkeypatch):
    """Completeness (2 fps), round 1 (4 fps) and a round-2 interval (8 fps) of one video:
    each frame is decoded once, and every pass shows the bytes a pass of its own would."""
    decoded = []

    class CountingReader(decord.VideoReader):
        def get_batch(self, indices):
            decoded.extend(indices)
            return super().get_batch(indices)

    monkeypatch.setattr(decord, "VideoReader", CountingReader)
    source = frames.VideoFrames(video, long_side=32)
    passes = [source.sample(2), source.sample(4), source.sample(8, 0.25, 0.75)]
    shown = {f.index for sampled in passes for f in sampled}
    assert sorted(decoded) == sorted(shown) and len(decoded) < sum(map(len, passes))
    alone = [
        frames.sample_frames(video, 2, long_side=32),
        frames.sample_frames(video, 4, long_side=32),
    ]
    assert [[f.jpeg for f in sampled] for sampled in passes[:2]] == [
        [f.jpeg for f in sampled] for sampled in alone
    ]


def test_encode_image_and_duration(tmp_path, video):
    path = tmp_path / "input.png"
    Image.new("RGB", (1000, 500), (10, 20, 30)).save(path)
    assert Image.open(io.BytesIO(frames.encode_image(path))).size == (768, 384)
    assert Image.open(io.BytesIO(frames.encode_image(path, long_side=2000))).size == (1000, 500)
    assert frames.video_duration(video) == 2.0


@pytest.mark.parametrize("content", ["", '{"data": {"tier": 2', '{"other": 1}'])
def test_a_broken_cache_entry_is_a_miss_asked_again_and_written_again(
    client, fake_vlm, caplog, content
):
    fake_vlm.responder = lambda received: {"tier": 2, "reasoning": "solved"}
    ask(client, judge_request())
    (entry,) = (client.cache_dir / "completeness").glob("*.json")
    entry.write_text(content)
    with caplog.at_level(logging.WARNING, logger="workflow_scripts.judge"):
        again = ask(client, judge_request())
    assert not again.cached and len(fake_vlm.requests) == 2
    assert f"ignoring cache entry {entry}" in caplog.text
    assert ask(client, judge_request()).cached  # written again
