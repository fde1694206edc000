"""FakeVLM: a test double of the VLM endpoints, at the network edge.

A local HTTP server (127.0.0.1, a free port, a background thread) speaking Gemini's REST
(`POST /v1beta/models/{model}:generateContent`) and OpenAI's
(`POST /v1/chat/completions`), so that the real google-genai and openai clients run
unchanged against it: `base_url=fake.url` for Gemini, `fake.url + "/v1"` for OpenAI.

Each request takes the next scripted answer, if any (an HTTP error with a retry hint, a
dropped connection, a stall, invalid JSON, no candidate, a blocked candidate or prompt),
else a normal reply whose JSON is `responder(received)`; by default the smallest value
the request's schema accepts. Given `api_key`, it refuses any other key with HTTP 401.
Given `rate_limit=(R, window_s)`, like the real APIs it refuses a request beyond R in
any `window_s` (HTTP 429 with a retry hint in both APIs' forms; refused requests do not
count). Every request is recorded, parsed (`Received`), with the API key it carried, when
it came and when it was answered, and its status; `max_in_flight` is the most requests
ever handled at once. Replies report the model version `version(model)`.
"""

from __future__ import annotations

import base64
import json
import math
import re
import socket
import struct
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

GEMINI_PATH = re.compile(r"/v1beta/models/([^/:]+):generateContent")
STATUS = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED"}
STATUS.update({408: "DEADLINE_EXCEEDED", 429: "RESOURCE_EXHAUSTED"})
STATUS.update({500: "INTERNAL", 503: "UNAVAILABLE", 504: "DEADLINE_EXCEEDED"})


@dataclass
class Received:
    """One request as the server saw it."""

    protocol: str  # "gemini" | "openai"
    model: str
    texts: list[str]
    images: list[bytes]
    schema: dict | None
    system: str | None
    api_key: str | None
    body: dict
    at: float = field(default_factory=time.monotonic)
    done: float | None = None  # when the answer was sent
    status: int | None = None  # the answer's HTTP status (None: the connection was dropped)


@dataclass(frozen=True)
class Script:
    """The answer to one request; the defaults give a normal reply."""

    status: int = 200
    message: str = ""
    retry_delay: float | None = None  # Gemini's RetryInfo in the error details
    retry_after: float | None = None  # the Retry-After header
    delay: float = 0.0
    reset: bool = False
    text: str | None = None  # the reply text instead of responder's JSON
    empty: bool = False
    finish: str | None = None  # e.g. "SAFETY" (OpenAI: content_filter)
    prompt_block: str | None = None


def http_error(code: int, message: str = "scripted error", **hints) -> Script:
    """An HTTP error; `retry_delay=` / `retry_after=` add a retry hint."""
    return Script(status=code, message=message, **hints)


RESET = Script(reset=True)
INVALID_JSON = Script(text='{"tier": 2, "reasoning": ')
EMPTY = Script(empty=True)
BLOCKED = Script(finish="SAFETY")
PROMPT_BLOCKED = Script(prompt_block="SAFETY")


def stall(seconds: float) -> Script:
    return Script(delay=seconds)


def example(schema: dict):
    """The smallest value `schema` accepts (objects, arrays, scalars, enums, minimums)."""
    if "enum" in schema:
        return schema["enum"][0]
    kind = schema.get("type", "object")
    kind = next(k for k in kind if k != "null") if isinstance(kind, list) else kind
    if kind == "object":
        return {name: example(sub) for name, sub in schema.get("properties", {}).items()}
    if kind == "array":
        return [example(schema.get("items", {})) for _ in range(schema.get("minItems", 0))]
    if kind in ("integer", "number"):
        return schema.get("minimum", 0)
    return {"string": "ok", "boolean": False}.get(kind)


def _b64(data: str) -> bytes:
    """Standard or URL-safe base64, padded or not (google-genai sends URL-safe)."""
    data = data.replace("+", "-").replace("/", "_")
    return base64.urlsafe_b64decode(data + "=" * (-len(data) % 4))


def _parse_gemini(model: str, body: dict, api_key: str | None) -> Received:
    parts = [part for content in body.get("contents", []) for part in content["parts"]]
    system = body.get("systemInstruction", {}).get("parts", [{}])[0].get("text")
    return Received(
        protocol="gemini",
        model=model,
        texts=[part["text"] for part in parts if "text" in part],
        images=[_b64(part["inlineData"]["data"]) for part in parts if "inlineData" in part],
        schema=body.get("generationConfig", {}).get("responseJsonSchema"),
        system=system,
        api_key=api_key,
        body=body,
    )


def _parse_openai(body: dict, api_key: str | None) -> Received:
    texts, images, system = [], [], None
    for message in body["messages"]:
        if message["role"] == "system":
            system = message["content"]
            continue
        for part in message["content"]:
            if part["type"] == "text":
                texts.append(part["text"])
            else:
                images.append(base64.b64decode(part["image_url"]["url"].split(",", 1)[1]))
    response_format = body.get("response_format", {})
    return Received(
        protocol="openai",
        model=body["model"],
        texts=texts,
        images=images,
        schema=response_format.get("json_schema", {}).get("schema"),
        system=system,
        api_key=api_key,
        body=body,
    )


def version(model: str) -> str:
    """The model version a reply reports for a request naming `model`."""
    return f"{model}-fake-0001"


def _usage(received: Received, text: str) -> tuple[int, int, int]:
    """Deterministic token counts: prompt, candidates, thoughts (always 5)."""
    prompt = 258 * len(received.images) + sum(len(t) for t in received.texts) // 4 + 1
    return prompt, len(text) // 4 + 1, 5


def _gemini_reply(received: Received, script: Script, text: str) -> dict:
    prompt, candidates, thoughts = _usage(received, text)
    reply = {
        "candidates": []
        if script.empty or script.prompt_block
        else [
            {
                "content": {"role": "model", "parts": [{"text": text}]},
                "finishReason": script.finish or "STOP",
                "index": 0,
            }
        ],
        "usageMetadata": {
            "promptTokenCount": prompt,
            "candidatesTokenCount": candidates,
            "thoughtsTokenCount": thoughts,
            "totalTokenCount": prompt + candidates + thoughts,
        },
        "modelVersion": version(received.model),
    }
    if script.prompt_block:
        reply["promptFeedback"] = {"blockReason": script.prompt_block}
    return reply


def _openai_reply(received: Received, script: Script, text: str) -> dict:
    prompt, candidates, thoughts = _usage(received, text)
    finish = "content_filter" if script.finish or script.prompt_block else "stop"
    message = {"role": "assistant", "content": None if script.finish else text}
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": 0,
        "model": version(received.model),
        "choices": []
        if script.empty
        else [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": candidates + thoughts,
            "total_tokens": prompt + candidates + thoughts,
            "completion_tokens_details": {"reasoning_tokens": thoughts},
            "prompt_tokens_details": {"cached_tokens": 0},
        },
    }


def _error_body(protocol: str, script: Script) -> dict:
    message = script.message
    if protocol == "openai":
        return {"error": {"message": message, "type": "scripted", "code": script.status}}
    error = {"code": script.status, "message": message, "status": STATUS.get(script.status, "")}
    if script.retry_delay is not None:
        error["details"] = [
            {
                "@type": "type.googleapis.com/google.rpc.RetryInfo",
                "retryDelay": f"{script.retry_delay}s",
            }
        ]
    return {"error": error}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body are separate writes
    server: _Server

    def log_message(self, *args) -> None:
        """Quiet: the test output is the pytest report."""

    def do_POST(self) -> None:
        fake, arrived = self.server.fake, time.monotonic()  # before parsing takes its time
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        auth = self.headers.get("Authorization", "")
        api_key = self.headers.get("x-goog-api-key") or auth.removeprefix("Bearer ") or None
        path = self.path.split("?")[0]
        if match := GEMINI_PATH.fullmatch(path):
            received, build = _parse_gemini(match[1], body, api_key), _gemini_reply
        elif path == "/v1/chat/completions":
            received, build = _parse_openai(body, api_key), _openai_reply
        else:
            self._send(404, {"error": {"code": 404, "message": f"no route {path}"}})
            return
        received.at = arrived
        script = fake._enter(received)
        if fake.api_key is not None and api_key != fake.api_key:
            script = http_error(401, "API key not valid. Please pass a valid API key.")
        received.status = None if script.reset else script.status
        try:
            time.sleep(fake.reply_time() + script.delay)
            if script.reset:
                self.connection.setsockopt(
                    socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0)
                )
                self.connection.close()
                self.close_connection = True
            elif script.status != 200:
                headers = {}
                if script.retry_after is not None:
                    headers["Retry-After"] = f"{script.retry_after:g}"
                self._send(script.status, _error_body(received.protocol, script), headers)
            else:
                text = script.text
                if text is None:  # a responder's str is the reply text as it is
                    answer = fake.responder(received)
                    text = answer if isinstance(answer, str) else json.dumps(answer)
                self._send(200, build(received, script, text))
        finally:
            fake._leave(received)

    def _send(self, status: int, payload: dict, headers: dict | None = None) -> None:
        data = json.dumps(payload).encode("utf-8")
        self.send_response(status)
        for name, value in {"Content-Type": "application/json", **(headers or {})}.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    request_queue_size = 128  # the default 5 drops bursts of new connections
    fake: FakeVLM

    def handle_error(self, request, client_address) -> None:
        """A client that hung up (timeout tests) is expected; anything else is reported."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class FakeVLM:
    """The fake VLM server; use as a context manager or with start()/stop()."""

    def __init__(
        self,
        responder: Callable[[Received], dict] | None = None,
        delay: float | Callable[[], float] = 0.0,
        api_key: str | None = None,
        rate_limit: tuple[int, float] | None = None,
    ):
        self.responder = responder or (lambda received: example(received.schema or {}))
        self.delay = delay
        self.api_key = api_key  # when set, any other key is refused with 401
        self.rate_limit = rate_limit  # (requests, seconds): beyond it, 429
        self._accepted: deque[float] = deque()  # arrival times within the rate window
        self.rate_limited = 0  # requests refused for the rate limit
        self.requests: list[Received] = []
        self.in_flight = self.max_in_flight = 0
        self._scripts: deque[Script] = deque()
        self._lock = threading.Lock()
        self._server: _Server | None = None

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def script(self, *answers: Script) -> None:
        """Queues answers for the next requests, in order."""
        with self._lock:
            self._scripts.extend(answers)

    def start(self) -> FakeVLM:
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.fake = self
        threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True).start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> FakeVLM:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def reply_time(self) -> float:
        """Seconds this reply takes: `delay`, or a draw of it where it is a function."""
        return self.delay() if callable(self.delay) else self.delay

    def _enter(self, received: Received) -> Script:
        with self._lock:
            self.requests.append(received)
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            if wait := self._over_rate(received.at):
                self.rate_limited += 1
                return http_error(
                    429,
                    f"Resource has been exhausted (e.g. check quota). Please retry in {wait:.1f}s.",
                    retry_delay=round(wait, 1),
                    retry_after=math.ceil(wait),
                )
            return self._scripts.popleft() if self._scripts else Script()

    def _over_rate(self, now: float) -> float:
        """0 if a request at `now` is within the rate limit (and counts), else the seconds
        until it would be."""
        if self.rate_limit is None:
            return 0.0
        limit, window = self.rate_limit
        while self._accepted and self._accepted[0] <= now - window:
            self._accepted.popleft()
        if len(self._accepted) < limit:
            self._accepted.append(now)
            return 0.0
        return self._accepted[0] + window - now

    def _leave(self, received: Received) -> None:
        with self._lock:
            self.in_flight -= 1
            received.done = time.monotonic()


@pytest.fixture(name="fake_vlm")
def fake_vlm_fixture():
    """A running FakeVLM with the default responder; import this name into a test module."""
    with FakeVLM() as server:
        yield server
