"""FakeImageAPI: a test double of the image model APIs, at the network edge.

A local HTTP server (127.0.0.1, a free port, a background thread; fake_vlm's server) that
speaks each provider's protocol as its real SDK sends it, so that the SDKs run unchanged
against it (the registry entry's `base_url`: `fake.base_url(provider)`). Each protocol is
one module of this package (`base.Protocol`: routes, key, parsing, replies, errors).

Each request takes the answer set for its input image (`by_image`: the same every time),
else the next scripted answer (`script`), else a normal reply: the input
image made into another (its colours inverted, at the asked-for aspect, small so that
tests stay fast). A wrong key is HTTP 401. Every request is recorded (`sent`: the prompt,
the input image's bytes and the settings as the SDK sent them, the key). A protocol whose
answer links to the image hosts it here (`Protocol.host`): a GET of the link, without the
key, as a storage bucket serves it; `fetches` counts them.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from http.server import BaseHTTPRequestHandler

from tests.support.fake_vlm import _Server
from tests.support.image_doubles import protocols
from tests.support.image_doubles.base import Script, Sent

API_KEY = "test-image-key-0123456789"


class FakeImageAPI:
    """The double; a context manager that starts and stops the server."""

    def __init__(self, api_key: str = API_KEY) -> None:
        self.api_key, self.protocols = api_key, protocols()
        self.sent: list[Sent] = []
        self.files: dict[str, bytes] = {}  # a hosted image's path -> its bytes
        self.fetches = 0
        self._scripts: deque[Script] = deque()
        self.by_image: dict[bytes, Script] = {}  # an input image's bytes -> its answer
        self._lock = threading.Lock()
        for protocol in self.protocols.values():
            protocol.host = self._host

    def __enter__(self) -> FakeImageAPI:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                fake._handle(self)

            def do_GET(self):
                fake._fetch(self)

            def log_message(self, *args):
                pass

        self.server = _Server(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()

    def base_url(self, provider: str) -> str:
        return self.protocols[provider].base_url(self.url)

    def script(self, *answers: Script) -> None:
        """Queues answers for the next requests, in order."""
        with self._lock:
            self._scripts.extend(answers)

    def unscript(self) -> None:
        """Drops the answers still queued: the next requests get normal replies."""
        with self._lock:
            self._scripts.clear()

    def _host(self, data: bytes, name: str) -> str:
        with self._lock:
            self.files[f"/files/{name}"] = data
        return f"{self.url}/files/{name}"

    def _fetch(self, handler) -> None:
        with self._lock:
            data = self.files.get(handler.path.split("?")[0])
            self.fetches += 1
        if data is None:
            return _send(handler, 404, {"error": {"message": "NoSuchKey"}})
        handler.send_response(200)
        handler.send_header("content-type", "image/png")
        handler.send_header("content-length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)

    def _handle(self, handler) -> None:
        path = handler.path.split("?")[0]
        body = handler.rfile.read(int(handler.headers.get("content-length") or 0))
        routed = [(p, p.route.fullmatch(path)) for p in self.protocols.values()]
        protocol, match = next(((p, m) for p, m in routed if m), (None, None))
        if protocol is None:
            return _send(handler, 404, {"error": {"message": f"no route {path}"}})
        sent = protocol.parse(match, body, handler.headers)
        sent.key = protocol.key(handler.headers)
        with self._lock:
            self.sent.append(sent)
            script = self.by_image.get(sent.image) or (
                self._scripts.popleft() if self._scripts else Script()
            )
        if sent.key != self.api_key:
            script = Script(status=401, message="API key not valid. Please pass a valid key.")
        time.sleep(script.delay)
        if script.status != 200:
            answer, headers = protocol.error(script.status, script)
            sent.status = script.status
            return _send(handler, script.status, answer, headers)
        status, answer = (
            protocol.refusal(sent, script) if script.refuse else (200, protocol.reply(sent, script))
        )
        sent.status = status
        _send(handler, status, answer)


def _send(handler, status: int, answer: dict, headers: dict | None = None) -> None:
    data = json.dumps(answer).encode()
    handler.send_response(status)
    for name, value in {"content-type": "application/json", **(headers or {})}.items():
        handler.send_header(name, value)
    handler.send_header("content-length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)
