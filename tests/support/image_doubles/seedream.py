"""Seedream on BytePlus ModelArk as the Ark runtime SDK sends it: `POST /api/v3/images/
generations` (JSON: `model`, `prompt`, the input image as a base64 data URI in `image`,
`response_format`, `sequential_image_generation` and the settings at the top level, null
where unset) answers `{model, created, data: [{b64_json, size}], usage}`, the image as
JPEG (Seedream's output) at the asked-for size (`2K` at the input's aspect). A refusal:
HTTP 400 with code `OutputImageSensitiveContentDetected` (`refuse="output"`) or
`InputTextSensitiveContentDetected` (`refuse="prompt"`). Errors: `{"error": {code, message,
param, type}}`, a 429's retry hint in the Retry-After header. The key: a bearer token."""

from __future__ import annotations

import base64
import io
import json
import re
import time

from PIL import Image

from tests.support.image_doubles.base import Protocol as Base
from tests.support.image_doubles.base import Script, Sent, made_image

REQUEST_ID = "Request ID: 021772000000000000000000000000000000000000000000000001"
REFUSALS = {
    "output": ("OutputImageSensitiveContentDetected",
               "The request failed because the output image may contain sensitive information."),
    "prompt": ("InputTextSensitiveContentDetected",
               "The request failed because the input text may contain sensitive information."),
}  # fmt: skip
TYPES = {400: "BadRequest", 401: "Unauthorized", 429: "TooManyRequests"}
CODES = {401: "AuthenticationError", 429: "RateLimitExceeded.EndpointIPMExceeded"}
FIELDS = ("model", "prompt", "image")


class Protocol(Base):
    provider = "seedream"
    route = re.compile(r"/api/v3/images/generations")

    def base_url(self, url: str) -> str:
        return f"{url}/api/v3"

    def key(self, headers) -> str | None:
        return headers.get("authorization", "").removeprefix("Bearer ")

    def parse(self, match, body: bytes, headers) -> Sent:
        request = json.loads(body)
        image = base64.b64decode(request["image"].split(",", 1)[1])
        settings = {  # the SDK sends every unset parameter as null
            name: value
            for name, value in request.items()
            if name not in FIELDS and value is not None
        }
        return Sent(self.provider, request["model"], request["prompt"], image, settings, None)

    def error(self, status: int, script: Script) -> tuple[dict, dict]:
        error = {"code": CODES.get(status, "InternalServiceError"),
                 "message": f"{script.message} {REQUEST_ID}", "param": "",
                 "type": TYPES.get(status, "InternalServerError")}  # fmt: skip
        headers = {} if script.retry_s is None else {"retry-after": f"{script.retry_s:g}"}
        return {"error": error}, headers

    def refusal(self, sent: Sent, script: Script) -> tuple[int, dict]:
        code, message = REFUSALS[script.refuse]
        error = {"code": code, "message": f"{message} {REQUEST_ID}", "param": "",
                 "type": "BadRequest"}  # fmt: skip
        return 400, {"error": error}

    def reply(self, sent: Sent, script: Script) -> dict:
        size = sent.settings.get("size", "2K")
        if size in ("2K", "4K"):  # the input's aspect at 2048x2048's (4096x4096's) pixels
            width, height = Image.open(io.BytesIO(sent.image)).size
            scale = (2048 if size == "2K" else 4096) / (width * height) ** 0.5
            size = f"{round(width * scale)}x{round(height * scale)}"
        width, height = map(int, size.split("x"))
        image = made_image(sent.image, (width // 32, height // 32), script.format or "JPEG")
        return {
            "model": sent.model,
            "created": int(time.time()),
            "data": [{"b64_json": base64.b64encode(image).decode(), "size": size}],
            "usage": {"generated_images": 1, "output_tokens": width * height // 256,
                      "total_tokens": width * height // 256},
        }  # fmt: skip
