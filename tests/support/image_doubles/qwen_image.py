"""Qwen-Image on Model Studio as dashscope's 2.0 client sends it: `POST /api/v1/services/
aigc/multimodal-generation/generation` (JSON: `model`, `input.messages`, one user message
whose `content` holds `{"image": ...}` (a data URI) and `{"text": ...}` parts, and
`parameters`) answers `{output: {choices: [{finish_reason, message: {role, content:
[{"image": <signed link>}]}}]}, usage: {width, height, image_count}, request_id}`. The link
(the server's `Protocol.host`, fetched without the key) serves the PNG at the asked-for
size, else at the input's. A refusal: HTTP 400 `DataInspectionFailed`, "Output data ..."
(`refuse="output"`) or "Input data ..." (`refuse="prompt"`). Errors: `{request_id, code,
message}`, a 429's retry hint in Retry-After. The key: a bearer token."""

from __future__ import annotations

import base64
import io
import json
import re
import time
import uuid

from PIL import Image

from tests.support.image_doubles.base import Protocol as Base
from tests.support.image_doubles.base import Script, Sent, made_image

REFUSALS = {
    "output": "Output data may contain inappropriate content.",
    "prompt": "Input data may contain inappropriate content.",
}
CODES = {400: "InvalidParameter", 401: "InvalidApiKey", 429: "Throttling.RateQuota"}


class Protocol(Base):
    provider = "qwen_image"
    route = re.compile(r"/api/v1/services/aigc/multimodal-generation/generation")

    def base_url(self, url: str) -> str:
        return f"{url}/api/v1"

    def key(self, headers) -> str | None:
        return headers.get("authorization", "").removeprefix("Bearer ")

    def parse(self, match, body: bytes, headers) -> Sent:
        request = json.loads(body)
        (message,) = request["input"]["messages"]
        images = [part["image"] for part in message["content"] if "image" in part]
        texts = [part["text"] for part in message["content"] if "text" in part]
        image = base64.b64decode(images[0].split(",", 1)[1]) if images else b""
        return Sent(self.provider, request["model"], "".join(texts), image,
                    request.get("parameters") or {}, None)  # fmt: skip

    def error(self, status: int, script: Script) -> tuple[dict, dict]:
        error = {"request_id": str(uuid.uuid4()), "code": CODES.get(status, "InternalError"),
                 "message": script.message}  # fmt: skip
        headers = {} if script.retry_s is None else {"retry-after": f"{script.retry_s:g}"}
        return error, headers

    def refusal(self, sent: Sent, script: Script) -> tuple[int, dict]:
        return 400, {"request_id": str(uuid.uuid4()), "code": "DataInspectionFailed",
                     "message": REFUSALS[script.refuse]}  # fmt: skip

    def reply(self, sent: Sent, script: Script) -> dict:
        size = sent.settings.get("size")
        width, height = (
            map(int, size.split("*")) if size else Image.open(io.BytesIO(sent.image)).size
        )
        image = made_image(sent.image, (width // 32, height // 32), script.format or "PNG")
        name = f"{uuid.uuid4().hex}.png"
        expires = int(time.time()) + 86400  # the link is kept 24 h
        link = f"{self.host(image, name)}?Expires={expires}&OSSAccessKeyId=LTAI5tFake&Signature=s"
        content = [{"image": link}]
        return {
            "output": {"choices": [{"finish_reason": "stop",
                                    "message": {"role": "assistant", "content": content}}]},
            "usage": {"width": width, "height": height, "image_count": 1},
            "request_id": str(uuid.uuid4()),
        }  # fmt: skip
