"""FakeVideoAPI: a test double of the commercial video APIs, at the network edge.

A local HTTP server (127.0.0.1, a free port, a background thread) speaking each provider's
REST protocol as its real SDK sends it, so that every SDK runs unchanged against it (the
registry entry's `base_url`: `fake.base_url(key)`). Each protocol is one module of
tests/support/video_doubles/ (routes, key, error bodies, answers); what they share is here.

Each operation stays running for `polls` polls. What a submission ends as is chosen by its
input image (`refuse(path, outcome)`: a submission whose image looks like that one, resized
or not, ends `refused` or `failed`); `forget()` drops every operation (an expired one).
`throttle` answers that many next requests with HTTP 429 and a retry hint. `taken_then`
makes the next submissions, each taken (the operation made and billed), end another way: an
HTTP status (a gateway's 502 after the service took it), `LATE` (the answer sent `late_s`
seconds later: past a client's read timeout) or `HELD` (no answer until `release()`: a job
killed while its submission is out). A wrong key is
HTTP 401 (a signed download link the service handed out asks for none). A model in
`retired` is answered as its provider answers a model it no longer serves. The video is a
real mp4 made from the input image with imageio: the asked-for seconds at `fps` frames a
second, small (`FRAME`) so that tests stay fast. Every submission is recorded
(`submissions`), every key seen too.

A submission the service refuses outright (its filter answers the submission itself) is
no operation and is not billed (`billed()` leaves it out).
"""

from __future__ import annotations

import contextlib
import io
import itertools
import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import imageio.v3 as iio
import numpy as np
from PIL import Image

from tests.support.video_doubles import doubles

FRAME = (256, 144)  # width, height of the double's videos
LATE, HELD = "late", "held"  # `taken_then`'s answers besides an HTTP status
# The key: Kling's is two (an access key and a secret of 32 characters or more, joined by a
# colon, as its registry variable holds them); the other providers take it as one.
API_KEY = "test-access-key:test-secret-key-0123456789abcdef012345"


@dataclass
class Operation:
    provider: str
    id: str
    model: str
    prompt: str
    image: bytes
    seconds: int
    settings: dict
    outcome: str  # ok | refused | failed
    polls_left: int
    created: float = field(default_factory=time.time)
    taken: bool = True  # False: refused at submission (no operation id went back, not billed)


def fingerprint(image: bytes) -> np.ndarray:
    """The image at 16x9 in grey: the same for the image and a resized copy of it."""
    grey = Image.open(io.BytesIO(image)).convert("L").resize((16, 9), Image.BOX)
    return np.asarray(grey, dtype=np.int16)


def make_video(image: bytes, seconds: int, fps: int) -> bytes:
    """A real mp4: the image, shrunk, drifting one pixel a frame, for `seconds`."""
    frame = np.asarray(Image.open(io.BytesIO(image)).convert("RGB").resize(FRAME))
    frames = np.stack([np.roll(frame, k, axis=1) for k in range(seconds * fps)])
    return iio.imwrite("<bytes>", frames, extension=".mp4", fps=fps, codec="libx264")


class FakeVideoAPI:
    """The double; a context manager that starts and stops the server."""

    def __init__(self, api_key: str = API_KEY, polls: int = 2, fps: int = 4):
        self.api_key, self.polls, self.fps = api_key, polls, fps
        self.doubles = doubles()  # by registry key
        for double in self.doubles.values():
            double.api_key = api_key
        self.outcomes: list[tuple[np.ndarray, str]] = []
        self.operations: dict[str, Operation] = {}
        self.submissions: list[Operation] = []
        self.requests: list[tuple[str, str, int]] = []  # method, path, status
        self.keys: set[str | None] = set()
        self.throttle = 0
        self.taken_then: list[int | str] = []  # the next submissions: taken, then so
        self.late_s = 1.0
        self._released = threading.Event()
        self.retired: set[str] = set()  # model ids past their shutdown date
        self._ids = itertools.count(1)
        self._lock = threading.Lock()

    def __enter__(self) -> FakeVideoAPI:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                fake._handle(self, "POST")

            def do_GET(self):
                fake._handle(self, "GET")

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()

    # -- what tests ask ------------------------------------------------------------------

    def base_url(self, key: str) -> str:
        """The `base_url` of registry entry `key` that points its SDK here."""
        return self.doubles[key].base_url(self.url)

    def submitted(self, provider: str | None = None) -> list[Operation]:
        return [op for op in self.submissions if provider in (None, op.provider)]

    def billed(self, provider: str | None = None) -> list[Operation]:
        """The submissions the service took: all but those it refused at submission."""
        return [op for op in self.submitted(provider) if op.taken]

    def forget(self) -> None:
        """Every operation expires: the provider no longer knows them."""
        with self._lock:
            self.operations.clear()

    def release(self) -> None:
        """Every submission `HELD` gets its answer (to a client that may be gone)."""
        self._released.set()

    def refuse(self, image_path, outcome: str = "refused") -> None:
        """Submissions of this input image end as `outcome` (refused | failed)."""
        with open(image_path, "rb") as handle:
            self.outcomes.append((fingerprint(handle.read()), outcome))

    # -- what the protocols share (tests/support/video_doubles/) ---------------------------

    def submit(self, double, model: str, prompt: str, image: bytes, seconds: int,
               settings: dict) -> Operation:  # fmt: skip
        """A new operation of `double`'s provider, recorded as a submission."""
        seen = fingerprint(image)
        found = [outcome for print_, outcome in self.outcomes if np.abs(print_ - seen).max() <= 8]
        with self._lock:
            op_id = double.operation_id(next(self._ids), model)
            op = Operation(double.provider, op_id, model, prompt, image, seconds, settings,
                           found[0] if found else "ok", self.polls)  # fmt: skip
            self.operations[op.id] = op
            self.submissions.append(op)
        return op

    def poll(self, op_id: str) -> Operation | None:
        """The operation (one poll fewer left), or None where the server does not know it."""
        with self._lock:
            op = self.operations.get(op_id)
            if op is not None and op.polls_left > 0:
                op.polls_left -= 1
            return op

    def video(self, op: Operation) -> bytes:
        return make_video(op.image, op.seconds, self.fps)

    def _handle(self, handler, method: str) -> None:
        path = handler.path.split("?")[0]
        body = handler.rfile.read(int(handler.headers.get("content-length") or 0))
        routed = [(d, d.route.fullmatch(path)) for d in self.doubles.values()]
        double, match = next(((d, m) for d, m in routed if m), (None, None))
        if double is None:
            return self._reply(handler, method, 404, {"error": {"message": f"no route {path}"}})
        if not double.signed(path):  # a signed download link carries no key
            key = double.key(handler.headers)
            self.keys.add(key)
            if key != self.api_key:
                return self._reply(handler, method, 401, double.error(401, "API key not valid"))
        with self._lock:
            throttled, self.throttle = self.throttle > 0, max(0, self.throttle - 1)
        if throttled:
            message = "Quota exceeded for video requests; please retry in 1s"
            return self._reply(handler, method, 429, double.error(429, message), retry=1)
        made = len(self.submissions)
        status, answer = double.handle(self, method, match, body, handler.headers)
        with self._lock:
            gateway = (
                self.taken_then.pop(0) if len(self.submissions) > made and self.taken_then else None
            )
        if gateway not in (None, LATE, HELD):  # the operation made (and billed), the answer
            status, answer = gateway, double.error(gateway, "upstream answered too late")
        self.requests.append((method, handler.path, status))  # as taken: before any delay
        if gateway == LATE:
            time.sleep(self.late_s)
        elif gateway == HELD:
            self._released.wait(120)
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # the client gave up
            self._send(handler, status, answer)

    def _reply(self, handler, method, status, answer, retry: float | None = None) -> None:
        self.requests.append((method, handler.path, status))
        self._send(handler, status, answer, retry)

    @staticmethod
    def _send(handler, status, answer, retry: float | None = None) -> None:
        data = answer if isinstance(answer, bytes) else json.dumps(answer).encode()
        handler.send_response(status)
        kind = "video/mp4" if isinstance(answer, bytes) else "application/json"
        handler.send_header("content-type", kind)
        handler.send_header("content-length", str(len(data)))
        if retry is not None:
            handler.send_header("retry-after", str(retry))
        handler.end_headers()
        handler.wfile.write(data)
