"""Gemini's image models as google-genai sends them: `POST /v1beta/models/{model}:
generateContent` (JSON: the input image inline and the prompt in `contents`, the image
settings in `generationConfig.imageConfig`, `responseModalities: ["IMAGE"]`). The reply's
candidate holds, as Gemini 3 Pro Image answers, a thought and an interim image marked
`thought`, a text part, then the image inline (`inlineData`, base64; PNG, or JPEG where
scripted), with `usageMetadata` by modality. A refusal: a candidate finished with
`IMAGE_SAFETY` and no content, or (`refuse="prompt"`) no candidate and `promptFeedback`
with a `blockReason`. Errors: `{"error": {code, message, status, details}}`, a 429's
retry hint as RetryInfo in `details` (no Retry-After header). The key: `x-goog-api-key`."""

from __future__ import annotations

import base64
import json
import re

from tests.support.fake_vlm import STATUS, _b64
from tests.support.image_doubles.base import Protocol as Base
from tests.support.image_doubles.base import Script, Sent, made_image

FILTERED = "Unable to show the generated image: it may violate our image policies."
SIDE = {None: 64, "1K": 64, "2K": 128, "4K": 256}  # the made image's long side, by image_size
IMAGE_TOKENS = {None: 1120, "1K": 1120, "2K": 1120, "4K": 2000}


class Protocol(Base):
    provider = "gemini_image"
    route = re.compile(r"/v1beta/models/(?P<model>[^/:]+):generateContent")

    def key(self, headers) -> str | None:
        return headers.get("x-goog-api-key")

    def parse(self, match, body: bytes, headers) -> Sent:
        request = json.loads(body)
        parts = [part for content in request["contents"] for part in content["parts"]]
        images = [_b64(part["inlineData"]["data"]) for part in parts if "inlineData" in part]
        texts = [part["text"] for part in parts if "text" in part]
        settings = request.get("generationConfig", {})
        return Sent(self.provider, match["model"], "\n".join(texts), images[0], settings, None)

    def error(self, status: int, script: Script) -> tuple[dict, dict]:
        error = {"code": status, "message": script.message, "status": STATUS.get(status, "")}
        if script.retry_s is not None:
            error["details"] = [{"@type": "type.googleapis.com/google.rpc.RetryInfo",
                                 "retryDelay": f"{script.retry_s:g}s"}]  # fmt: skip
        return {"error": error}, {}

    def refusal(self, sent: Sent, script: Script) -> tuple[int, dict]:
        if script.refuse == "prompt":
            return 200, self._answer(
                sent, [], {"promptFeedback": {"blockReason": "PROHIBITED_CONTENT"}}
            )
        candidate = {"finishReason": "IMAGE_SAFETY", "finishMessage": FILTERED, "index": 0}
        return 200, self._answer(sent, [candidate])

    def reply(self, sent: Sent, script: Script) -> dict:
        config = sent.settings.get("imageConfig", {})
        size = self._size(config.get("aspectRatio", "1:1"), config.get("imageSize"))
        image_format = script.format or "PNG"
        image = made_image(sent.image, size, image_format)
        sketch = made_image(sent.image, (16, 16), "PNG")  # an interim image while thinking
        parts = [
            {"text": "**Planning the edit**\n\nWorking out the layout first.", "thought": True},
            {"inlineData": {"mimeType": "image/png", "data": _encode(sketch)}, "thought": True},
            {"text": "Here is the edited image."},
            {"inlineData": {"mimeType": f"image/{image_format.lower()}", "data": _encode(image)},
             "thoughtSignature": "c2lnbmF0dXJl"},
        ]  # fmt: skip
        content = {"role": "model", "parts": parts}
        return self._answer(sent, [{"content": content, "finishReason": "STOP", "index": 0}])

    def _size(self, aspect: str, image_size: str | None) -> tuple[int, int]:
        width, height = map(int, aspect.split(":"))
        long = SIDE[image_size]
        if width >= height:
            return long, round(long * height / width)
        return round(long * width / height), long

    def _answer(self, sent: Sent, candidates: list, extra: dict | None = None) -> dict:
        made = IMAGE_TOKENS[sent.settings.get("imageConfig", {}).get("imageSize")]
        made = made if candidates and "content" in candidates[0] else 0
        prompt = 258 + len(sent.prompt) // 4 + 1
        usage = {
            "promptTokenCount": prompt,
            "candidatesTokenCount": made,
            "thoughtsTokenCount": 180 if made else 0,
            "totalTokenCount": prompt + made + (180 if made else 0),
            "promptTokensDetails": [
                {"modality": "TEXT", "tokenCount": prompt - 258},
                {"modality": "IMAGE", "tokenCount": 258},
            ],  # fmt: skip
        }
        answer = {"candidates": candidates} if candidates else {}
        return answer | (extra or {}) | {"usageMetadata": usage, "modelVersion": sent.model,
                                         "responseId": "fake-response-0001"}  # fmt: skip


def _encode(data: bytes) -> str:
    return base64.b64encode(data).decode()
