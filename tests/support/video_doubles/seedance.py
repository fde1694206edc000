"""Seedance 2.0 on BytePlus ModelArk as the Ark runtime SDK sends it: `POST /api/v3/contents/
generations/tasks` (JSON: `content` holds the prompt and the first frame as a base64 data
URI, role `first_frame`; the settings at the top level, null where unset) answers the task
id, or HTTP 400 `InputImageSensitiveContentDetected` for an input the safety filter refuses
(no task: `op.taken` is False); `GET .../tasks/{id}` answers it queued, running, then
succeeded with a signed link to the video on storage (`content.video_url`), or failed with
the service's `error`; a task it does not know is HTTP 404. The link is fetched without the
key; one in `expired_links` (past its 24 hours) answers 403 as storage does. The key: a
bearer token. Error bodies: `{"error": {"code", "message", "param", "type"}}`."""

from __future__ import annotations

import base64
import io
import json
import re
import time

from PIL import Image

from tests.support.video_doubles.base import Double as Base

REQUEST_ID = "Request ID: 021772000000000000000000000000000000000000000000000000"
REFUSAL = "The request failed because the input image may contain sensitive information."
FAILURE = "The service encountered an unexpected internal error."
INVALID = "One or more parameters specified in the request are not valid."
TYPES = {400: "BadRequest", 401: "Unauthorized", 404: "NotFound", 429: "TooManyRequests"}
CODES = {401: "AuthenticationError", 404: "ResourceNotFound",
         429: "RateLimitExceeded.EndpointRPMExceeded"}  # fmt: skip
SETTINGS = ("resolution", "ratio", "duration", "generate_audio", "watermark", "seed")
ALLOWED = {
    "resolution": ("480p", "720p", "1080p"),
    "ratio": ("16:9", "4:3", "1:1", "3:4", "9:16", "21:9", "adaptive"),
    "duration": (-1, *range(4, 16)),
}
STORAGE = "/tos/ark-content-generation"  # the signed links' bucket, served here


class Double(Base):
    provider = "seedance"
    refusal = REFUSAL
    price = 0.15
    route = re.compile(
        rf"/api/v3/contents/generations/tasks(?:/(?P<id>[^/]+))?|{STORAGE}/(?P<video>[^/]+)\.mp4"
    )

    def __init__(self) -> None:
        self.expired_links: set[str] = set()  # task ids whose video link is past its 24 hours

    def base_url(self, url: str) -> str:
        return f"{url}/api/v3"

    def short(self, generation: dict) -> dict:
        return generation | {"duration": 4}

    def signed(self, path: str) -> bool:
        return path.startswith(f"{STORAGE}/")

    def error(self, status: int, message: str, code: str | None = None) -> dict:
        return {"error": {"code": code or CODES.get(status, "InternalServiceError"),
                          "message": f"{message} {REQUEST_ID}", "param": "",
                          "type": TYPES.get(status, "InternalServerError")}}  # fmt: skip

    def operation_id(self, number: int, model: str) -> str:
        return f"cgt-20260301120000-{number:05d}"

    def handle(self, fake, method, match, body, headers):
        if match["video"]:
            return self._download(fake, match["video"])
        if method == "POST" and match["id"] is None:
            return self._create(fake, json.loads(body))
        op = fake.poll(match["id"])
        if op is None:
            return 404, self.error(404, f"The specified task {match['id']} is not found.")
        return 200, self._task(fake, op)

    def _create(self, fake, request: dict):
        settings = {key: request[key] for key in SETTINGS if request.get(key) is not None}
        texts = [part["text"] for part in request["content"] if part["type"] == "text"]
        frames = [part for part in request["content"] if part["type"] == "image_url"]
        if len(frames) != 1 or frames[0].get("role") != "first_frame" or len(texts) != 1:
            return 400, self.error(400, INVALID, "InvalidParameter")
        header, _, data = frames[0]["image_url"]["url"].partition(",")
        if not re.fullmatch(r"data:image/[a-z]+;base64", header):
            return 400, self.error(400, INVALID, "InvalidParameter")
        image = base64.b64decode(data)
        allowed = all(settings.get(key, values[0]) in values for key, values in ALLOWED.items())
        if not allowed or min(Image.open(io.BytesIO(image)).size) < 300:  # documented limits
            return 400, self.error(400, INVALID, "InvalidParameter")
        op = fake.submit(self, request["model"], texts[0], image, settings.get("duration", 5),
                         settings)  # fmt: skip
        if op.outcome == "refused":
            op.taken = False
            return 400, self.error(400, REFUSAL, "InputImageSensitiveContentDetected")
        return 200, {"id": op.id}

    def _task(self, fake, op) -> dict:
        task = {
            "id": op.id,
            "model": op.model,
            "status": "queued" if op.polls_left == fake.polls else "running",
            "error": None,
            "created_at": int(op.created),
            "updated_at": int(time.time()),
            "resolution": op.settings.get("resolution", "720p"),
            "ratio": op.settings.get("ratio", "adaptive"),
            "duration": op.seconds,
            "framespersecond": 24,
            "generate_audio": op.settings.get("generate_audio", True),
            "service_tier": "default",
            "execution_expires_after": 172800,
        }
        if op.polls_left > 0:
            return task
        if op.outcome != "ok":
            error = {"code": "InternalServiceError", "message": f"{FAILURE} {REQUEST_ID}"}
            return task | {"status": "failed", "error": error}
        link = f"{fake.url}{STORAGE}/{op.id}.mp4?X-Tos-Expires=86400&X-Tos-Signature=5f1e"
        tokens = 1280 * 720 * (24 * op.seconds + 1) // 1024  # 720p 16:9: 108,900 for 5 s
        usage = {"completion_tokens": tokens, "total_tokens": tokens}
        return task | {"status": "succeeded", "content": {"video_url": link}, "usage": usage}

    def _download(self, fake, task_id: str):
        op = fake.operations.get(task_id)
        if op is None or task_id in self.expired_links:
            return 403, {"Code": "AccessDenied", "Message": "Request has expired"}
        if op.polls_left > 0 or op.outcome != "ok":
            return 404, {"Code": "NoSuchKey", "Message": "The specified key does not exist."}
        return 200, fake.video(op)
