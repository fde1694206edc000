"""GPT Image as the openai SDK sends it: `POST /v1/images/edits` (multipart: the input image
as `image`, `prompt`, `model`, `n` and the settings as form fields) answers `{created,
background, output_format, quality, size, data: [{b64_json}], usage}`, the image in the
asked-for `output_format` (PNG by default). A refusal: HTTP 400 with error code
`moderation_blocked`, as the safety system answers. Errors: `{"error": {message, type,
param, code}}`, a 429's retry hint in the Retry-After header. The key: a bearer token."""

from __future__ import annotations

import base64
import io
import re
import time

from PIL import Image

from tests.support.image_doubles.base import Protocol as Base
from tests.support.image_doubles.base import Script, Sent, made_image
from tests.support.video_doubles.sora import _multipart

MODERATION = "The request was rejected by the safety system as it may include disallowed content."
CODES = {401: "invalid_api_key", 429: "rate_limit_exceeded", 500: "server_error"}
TYPES = {401: "invalid_request_error", 429: "requests", 500: "server_error"}
FORMATS = {"png": "PNG", "jpeg": "JPEG", "webp": "WEBP"}
FIELDS = ("model", "prompt", "image")


class Protocol(Base):
    provider = "openai_image"
    route = re.compile(r"/v1/images/edits")

    def base_url(self, url: str) -> str:
        return f"{url}/v1"

    def key(self, headers) -> str | None:
        return headers.get("authorization", "").removeprefix("Bearer ")

    def parse(self, match, body: bytes, headers) -> Sent:
        fields = _multipart(body, headers.get("content-type", ""))
        settings = {name: value.decode() for name, value in fields.items() if name not in FIELDS}
        model, prompt = fields["model"].decode(), fields["prompt"].decode()
        return Sent(self.provider, model, prompt, fields["image"], settings, None)

    def error(self, status: int, script: Script) -> tuple[dict, dict]:
        error = {"message": script.message, "type": TYPES.get(status, "invalid_request_error"),
                 "param": None, "code": CODES.get(status)}  # fmt: skip
        headers = {} if script.retry_s is None else {"retry-after": f"{script.retry_s:g}"}
        return {"error": error}, headers

    def refusal(self, sent: Sent, script: Script) -> tuple[int, dict]:
        error = {"message": MODERATION, "type": "image_generation_user_error", "param": None,
                 "code": "moderation_blocked"}  # fmt: skip
        return 400, {"error": error}

    def reply(self, sent: Sent, script: Script) -> dict:
        size = sent.settings.get("size", "auto")
        if size == "auto":
            size = "x".join(map(str, Image.open(io.BytesIO(sent.image)).size))
        width, height = map(int, size.split("x"))
        output_format = sent.settings.get("output_format", "png")
        image_format = script.format or FORMATS[output_format]
        image = made_image(sent.image, (width // 16, height // 16), image_format)
        text = len(sent.prompt) // 4 + 1
        usage = {
            "input_tokens": text + 388,
            "input_tokens_details": {"image_tokens": 388, "text_tokens": text},
            "output_tokens": 4160,
            "output_tokens_details": {"image_tokens": 4160, "text_tokens": 0},
            "total_tokens": text + 388 + 4160,
        }
        return {
            "created": int(time.time()),
            "background": "opaque",
            "output_format": output_format,
            "quality": sent.settings.get("quality", "auto"),
            "size": size,
            "data": [{"b64_json": base64.b64encode(image).decode()}],
            "usage": usage,
        }
