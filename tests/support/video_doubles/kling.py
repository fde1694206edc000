"""Kling 3.0 as its REST API answers: `POST /v1/videos/image2video` (JSON: `model_name`,
the first frame as bare base64 in `image`, `prompt`, `mode`, `duration` as a string) answers
`{code: 0, message, request_id, data: {task_id, task_status: submitted, ...}}`; `GET
/v1/videos/image2video/{task_id}` answers it submitted, processing, then `succeed` with the
video's link in `task_result.videos[0].url` (a CDN link, served here without a token), or
`failed` with `task_status_msg` (and `message` still "SUCCEED", as Kling answers); a task
it does not know is HTTP 404, code 1203. Errors: the HTTP status and `{code, message,
request_id}` (Kling's error codes: 1000 a refused token, 1201 a bad parameter, 1301 the
content security policy, 1302 the rate limit, ...). The key: a bearer JWT (HS256, `iss` the
access key, `exp`, `nbf`) checked with the secret of the server's `ACCESS:SECRET` key. A
prompt with `BLOCKED` in it is refused at submission (400, 1301), as Kling's content
security policy refuses an input outright. Kling documents no answer for a retired model:
one in `fake.retired` is answered as a model that does not exist (404, 1203). Served under
`/kling` (the entry's `base_url`, as a proxy serves Kling), apart from Sora's routes."""

from __future__ import annotations

import base64
import binascii
import io
import json
import re
import time
import uuid

import jwt
from PIL import Image

from tests.support.video_doubles.base import Double as Base

# A failed task's `task_status_msg` where the risk control refused it, as Kling 3.0 answers
# (quoted in integrations' reports), and one of another failure (new-api PR #2532's answer).
REFUSAL = "Failure to pass the risk control system"
FAILURE = "Image pixel is invalid"
BLOCKED = "blood and gore"
CODES = {400: 1201, 401: 1000, 404: 1203, 429: 1302, 500: 5000}
MESSAGES = {1203: "The requested resource does not exist", 1301: "Trigger the content "
            "security policy of the platform"}  # fmt: skip
DURATIONS = tuple(str(seconds) for seconds in range(3, 16))
UNITS_PER_SECOND = 0.6  # kling-v3 std: what `final_unit_deduction` counts


class Double(Base):
    provider = "kling"
    refusal = REFUSAL
    price = 0.08
    route = re.compile(
        r"/kling/v1/videos/image2video(?:/(?P<id>[^/]+))?"
        r"|/bs2/upload-kling-api/(?P<video>[^/]+)\.mp4"
    )

    def base_url(self, url: str) -> str:
        return f"{url}/kling"  # as a proxy serves it: apart from Sora's /v1/videos/{id}

    def short(self, generation: dict) -> dict:
        return generation | {"duration": "3"}

    def key(self, headers) -> str | None:
        """The server's key where the bearer token is signed with its secret and names its
        access key as the issuer; else None."""
        token = headers.get("authorization", "").removeprefix("Bearer ")
        access, _, secret = self.api_key.partition(":")
        try:
            if jwt.get_unverified_header(token) != {"alg": "HS256", "typ": "JWT"}:
                return None
            jwt.decode(token, secret, algorithms=["HS256"], issuer=access,
                       options={"require": ["iss", "exp", "nbf"]})  # fmt: skip
        except jwt.PyJWTError:
            return None
        return self.api_key

    def signed(self, path: str) -> bool:
        return path.startswith("/bs2/")

    def error(self, status: int, message: str, code: str | None = None) -> dict:
        return {"code": code or CODES.get(status, 5000), "message": message,
                "request_id": str(uuid.uuid4())}  # fmt: skip

    def operation_id(self, number: int, model: str) -> str:
        return f"86728374175911{number:04d}"

    def handle(self, fake, method, match, body, headers):
        if match["video"]:
            op = fake.operations.get(match["video"])
            return (200, fake.video(op)) if op else (404, {"message": "Not Found"})
        if method == "POST" and match["id"] is None:
            return self._create(fake, json.loads(body))
        op = fake.poll(match["id"])
        if op is None:
            return 404, self.error(404, MESSAGES[1203], 1203)
        return 200, self._answer(self._task(fake, op))

    def _create(self, fake, request: dict):
        model, prompt = request.get("model_name"), request.get("prompt", "")
        if model != "kling-v3" or model in fake.retired:
            return 404, self.error(404, MESSAGES[1203], 1203)
        image, problem = _image(request.get("image", ""))
        duration, mode = request.get("duration", "5"), request.get("mode", "std")
        problem = problem or next(
            (message for wrong, message in [
                (duration not in DURATIONS, f"duration must be one of {', '.join(DURATIONS)}"),
                (mode not in ("std", "pro"), "mode must be std or pro"),
                (request.get("sound", "off") not in ("on", "off"), "sound must be on or off"),
                (len(prompt) > 2500, "prompt cannot exceed 2500 characters"),
            ] if wrong), None,
        )  # fmt: skip
        if problem:
            return 400, self.error(400, problem)
        if BLOCKED in prompt:
            return 400, self.error(400, MESSAGES[1301], 1301)
        settings = {key: request[key] for key in ("mode", "duration", "sound") if key in request}
        op = fake.submit(self, model, prompt, image, int(duration), settings)
        task = {"task_id": op.id, "task_status": "submitted", "task_info": {}}
        return 200, self._answer(task | _times(op))

    def _task(self, fake, op) -> dict:
        task = {"task_id": op.id, "task_info": {}, "task_result": {}, "task_status_msg": ""}
        if op.polls_left > 0:
            status = "submitted" if op.polls_left == fake.polls else "processing"
            return task | {"task_status": status} | _times(op)
        if op.outcome != "ok":
            message = REFUSAL if op.outcome == "refused" else FAILURE
            failed = {"task_status": "failed", "task_status_msg": message}
            return task | failed | {"final_unit_deduction": "0"} | _times(op)
        url = f"{fake.url}/bs2/upload-kling-api/{op.id}.mp4?x-kcdn-pid=112452"
        video = {"id": str(uuid.uuid5(uuid.NAMESPACE_URL, url)), "url": url,
                 "duration": str(op.seconds)}  # fmt: skip
        units = f"{UNITS_PER_SECOND * op.seconds:g}"
        done = {"task_status": "succeed", "task_result": {"videos": [video]},
                "final_unit_deduction": units}  # fmt: skip
        return task | done | _times(op)

    def _answer(self, task: dict) -> dict:
        return {"code": 0, "message": "SUCCEED", "request_id": str(uuid.uuid4()), "data": task}


def _image(encoded: str) -> tuple[bytes, str | None]:
    """The image of bare base64 (or a problem, as Kling words it)."""
    if encoded.startswith("data:"):
        return b"", "image must be bare base64, without a data: prefix"
    try:
        data = base64.b64decode(encoded, validate=True)
        picture = Image.open(io.BytesIO(data))
    except (binascii.Error, OSError):
        return b"", "image is not a base64 image"
    width, height = picture.size
    if picture.format not in ("PNG", "JPEG") or min(width, height) < 300:
        return b"", "image must be a jpg or png of at least 300 px a side"
    if max(width / height, height / width) > 2.5:
        return b"", "image aspect ratio must be between 1:2.5 and 2.5:1"
    return data, None


def _times(op) -> dict:
    created = int(op.created * 1000)
    return {"created_at": created, "updated_at": max(created, int(time.time() * 1000))}
