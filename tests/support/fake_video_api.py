"""FakeVideoAPI: a test double of the Veo (Vertex AI) and Sora (OpenAI) video APIs, at the
network edge.

A local HTTP server (127.0.0.1, a free port, a background thread) speaking both REST
protocols as the real SDKs send them, so that google-genai and openai run unchanged
against it (`base_url=fake.url`):

- Veo: `POST /v1beta1/publishers/google/models/{model}:predictLongRunning` answers an
  operation name; `POST .../{model}:fetchPredictOperation` answers it running, then done
  with the video inline (`bytesBase64Encoded`), or refused (`raiMediaFilteredReasons`), or
  failed (`error`); an operation it does not know is HTTP 404. The key: `x-goog-api-key`.
- Sora: `POST /v1/videos` (multipart, the first frame as `input_reference`, which must be
  exactly `size`, as the real API requires); `GET /v1/videos/{id}` (queued, in_progress,
  completed or failed with `error`); `GET /v1/videos/{id}/content` the mp4. The key: a
  bearer token.

Each operation stays running for `polls` polls. What a submission ends as is chosen by its
input image (`refuse(path, outcome)`: a submission whose image looks like that one, resized
or not, ends `refused` or `failed`); `forget()`
drops every operation (an expired one). `throttle` answers that many next requests with
HTTP 429 and a retry hint. A wrong key is HTTP 401. A Sora model in `retired` is answered
as OpenAI answers a model past its shutdown date (`RETIRED`). The video is a real mp4 made from the
input image with imageio: the asked-for seconds at `fps` frames a second, small (`FRAME`)
so that tests stay fast. Every submission is recorded (`submissions`), every key seen too.
"""

from __future__ import annotations

import base64
import email.parser
import io
import itertools
import json
import re
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import imageio.v3 as iio
import numpy as np
from PIL import Image

VEO = re.compile(
    r"/v1beta1/(?P<model>.+/models/[^/:]+):(?P<verb>predictLongRunning|fetchPredictOperation)"
)
SORA = re.compile(r"/v1/videos(?:/(?P<id>[^/]+)(?P<content>/content)?)?")
FRAME = (256, 144)  # width, height of the double's videos
# OpenAI's answer to a request for a model past its shutdown date: HTTP 404, error code
# `model_not_found`, a message pointing at the deprecations page. Its shape as users of the
# openai SDK reported it verbatim after the shutdowns of 2024-01-04 (text-davinci-003,
# gpt-4-0314: "Error code: 404 - {'error': {'message': 'The model `gpt-4-0314` has been
# deprecated, learn more here: https://platform.openai.com/docs/deprecations', 'type':
# 'invalid_request_error', 'param': None, 'code': 'model_not_found'}}").
RETIRED = (
    "The model `{model}` has been deprecated, learn more here: "
    "https://platform.openai.com/docs/deprecations"
)
REFUSAL = "The input image contains content that was blocked by the safety filter (code 58061214)"


@dataclass
class Operation:
    provider: str
    id: str
    model: str
    prompt: str
    image: bytes
    settings: dict
    outcome: str  # ok | refused | failed
    polls_left: int
    created: float = field(default_factory=time.time)


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

    def __init__(self, api_key: str = "test-video-key", polls: int = 2, fps: int = 4):
        self.api_key, self.polls, self.fps = api_key, polls, fps
        self.outcomes: list[tuple[np.ndarray, str]] = []
        self.operations: dict[str, Operation] = {}
        self.submissions: list[Operation] = []
        self.requests: list[tuple[str, str, int]] = []  # method, path, status
        self.keys: set[str | None] = set()
        self.throttle = 0
        self.retired: set[str] = set()  # Sora model ids past their shutdown date
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

    def submitted(self, provider: str | None = None) -> list[Operation]:
        return [op for op in self.submissions if provider in (None, op.provider)]

    def forget(self) -> None:
        """Every operation expires: the provider no longer knows them."""
        with self._lock:
            self.operations.clear()

    def refuse(self, image_path, outcome: str = "refused") -> None:
        """Submissions of this input image end as `outcome` (refused | failed)."""
        with open(image_path, "rb") as handle:
            self.outcomes.append((fingerprint(handle.read()), outcome))

    def _outcome(self, image: bytes) -> str:
        seen = fingerprint(image)
        found = [outcome for print_, outcome in self.outcomes if np.abs(print_ - seen).max() <= 8]
        return found[0] if found else "ok"

    # -- the protocols -------------------------------------------------------------------

    def _handle(self, handler, method: str) -> None:
        path = handler.path.split("?")[0]
        body = handler.rfile.read(int(handler.headers.get("content-length") or 0))
        veo, sora = VEO.fullmatch(path), SORA.fullmatch(path)
        bearer = handler.headers.get("authorization", "")
        key = handler.headers.get("x-goog-api-key") if veo else bearer.removeprefix("Bearer ")
        self.keys.add(key)
        if not (veo or sora):
            return self._reply(handler, method, 404, {"error": {"message": f"no route {path}"}})
        if key != self.api_key:
            return self._reply(handler, method, 401, _error(bool(veo), 401, "API key not valid"))
        with self._lock:
            throttled, self.throttle = self.throttle > 0, max(0, self.throttle - 1)
        if throttled:
            message = "Quota exceeded for video requests; please retry in 1s"
            return self._reply(handler, method, 429, _error(bool(veo), 429, message), retry=1)
        if veo:
            status, answer = self._veo(veo["model"], veo["verb"], json.loads(body or b"{}"))
        else:
            content_type = handler.headers.get("content-type", "")
            status, answer = self._sora(method, sora["id"], sora["content"], body, content_type)
        self._reply(handler, method, status, answer)

    def _reply(self, handler, method, status, answer, retry: float | None = None) -> None:
        self.requests.append((method, handler.path, status))
        data = answer if isinstance(answer, bytes) else json.dumps(answer).encode()
        handler.send_response(status)
        kind = "video/mp4" if isinstance(answer, bytes) else "application/json"
        handler.send_header("content-type", kind)
        handler.send_header("content-length", str(len(data)))
        if retry is not None:
            handler.send_header("retry-after", str(retry))
        handler.end_headers()
        handler.wfile.write(data)

    def _submit(self, provider: str, model: str, prompt: str, image: bytes, settings: dict):
        with self._lock:
            number = next(self._ids)
            op = Operation(
                provider,
                f"{number:04d}",
                model,
                prompt,
                image,
                settings,
                self._outcome(image),
                self.polls,
            )
            op.id = f"{model}/operations/op-{op.id}" if provider == "veo" else f"video_{op.id}"
            self.operations[op.id] = op
            self.submissions.append(op)
        return op

    def _poll(self, op_id: str) -> Operation | None:
        with self._lock:
            op = self.operations.get(op_id)
            if op is not None and op.polls_left > 0:
                op.polls_left -= 1
            return op

    def _veo(self, model: str, verb: str, body: dict) -> tuple[int, dict]:
        if verb == "predictLongRunning":
            (instance,) = body["instances"]
            image = base64.b64decode(instance["image"]["bytesBase64Encoded"])
            op = self._submit("veo", model, instance["prompt"], image, body["parameters"])
            return 200, {"name": op.id}
        op = self._poll(body["operationName"])
        if op is None:
            return 404, _error(True, 404, f"Operation {body['operationName']} not found")
        if op.polls_left > 0:
            return 200, {"name": op.id, "done": False}
        if op.outcome == "failed":
            return 200, {
                "name": op.id,
                "done": True,
                "error": {"code": 13, "message": "Video generation failed: internal error"},
            }
        response = {
            "@type": "type.googleapis.com/cloud.ai.large_models.vision.GenerateVideoResponse"
        }
        if op.outcome == "refused":
            response |= {"raiMediaFilteredCount": 1, "raiMediaFilteredReasons": [REFUSAL]}
        else:
            video = make_video(op.image, op.settings["durationSeconds"], self.fps)
            encoded = base64.b64encode(video).decode()
            response |= {
                "raiMediaFilteredCount": 0,
                "videos": [{"bytesBase64Encoded": encoded, "mimeType": "video/mp4"}],
            }
        return 200, {"name": op.id, "done": True, "response": response}

    def _sora(self, method, video_id, content, body: bytes, content_type: str):
        if method == "POST" and video_id is None:
            fields = _multipart(body, content_type)
            model = fields["model"].decode()
            if model in self.retired:
                message = RETIRED.format(model=model)
                return 404, _error(False, 404, message, "model_not_found")
            image = fields["input_reference"]
            size = fields.get("size", b"720x1280").decode()
            if "x".join(map(str, Image.open(io.BytesIO(image)).size)) != size:
                message = "Inpaint image must match the requested width and height"
                return 400, _error(False, 400, message)
            settings = {"size": size, "seconds": fields.get("seconds", b"4").decode()}
            op = self._submit("sora", model, fields["prompt"].decode(), image, settings)
            return 200, self._video(op)
        op = self._poll(video_id) if not content else self.operations.get(video_id)
        if op is None:
            return 404, _error(False, 404, f"Video with id '{video_id}' not found.")
        if content:
            if op.polls_left > 0 or op.outcome != "ok":
                return 400, _error(False, 400, "Video is not ready")
            return 200, make_video(op.image, int(op.settings["seconds"]), self.fps)
        return 200, self._video(op)

    def _video(self, op: Operation) -> dict:
        status = "queued" if op.polls_left == self.polls else "in_progress"
        video = {
            "id": op.id,
            "object": "video",
            "created_at": int(op.created),
            "model": op.model,
            "progress": 0,
            "seconds": op.settings["seconds"],
            "size": op.settings["size"],
            "status": status,
        }
        if op.polls_left == 0:
            video["progress"] = 100
            if op.outcome == "ok":
                video |= {"status": "completed", "expires_at": int(time.time()) + 3600}
            else:
                code = "moderation_blocked" if op.outcome == "refused" else "internal_error"
                video |= {
                    "status": "failed",
                    "error": {
                        "code": code,
                        "message": REFUSAL
                        if op.outcome == "refused"
                        else "Video generation failed",
                    },
                }
        return video


def _error(veo: bool, code: int, message: str, kind: str | None = None) -> dict:
    if veo:
        status = {
            400: "INVALID_ARGUMENT",
            401: "UNAUTHENTICATED",
            404: "NOT_FOUND",
            429: "RESOURCE_EXHAUSTED",
        }
        return {"error": {"code": code, "message": message, "status": status.get(code, "UNKNOWN")}}
    kind = kind or {429: "rate_limit_exceeded", 401: "invalid_api_key", 404: "not_found"}.get(code)
    error = {"message": message, "type": "invalid_request_error", "param": None, "code": kind}
    return {"error": error}


def _multipart(body: bytes, content_type: str) -> dict[str, bytes]:
    message = email.parser.BytesParser().parsebytes(
        f"Content-Type: {content_type}\r\n\r\n".encode() + body
    )
    return {
        part.get_param("name", header="content-disposition"): part.get_payload(decode=True)
        for part in message.get_payload()
    }
