"""Sora 2 as the openai SDK sends it: `POST /v1/videos` (multipart, the first frame as
`input_reference`, which must be exactly `size`, as the real API requires); `GET
/v1/videos/{id}` (queued, in_progress, completed, or failed with `error`); `GET
/v1/videos/{id}/content` the mp4. The key: a bearer token. A model in `fake.retired` is
answered as OpenAI answers a model past its shutdown date (`RETIRED`)."""

from __future__ import annotations

import email.parser
import io
import re
import time

from PIL import Image

from tests.support.video_doubles.base import Double as Base

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
CODES = {429: "rate_limit_exceeded", 401: "invalid_api_key", 404: "not_found"}


class Double(Base):
    provider = "sora"
    refusal = REFUSAL
    price = 0.10
    route = re.compile(r"/v1/videos(?:/(?P<id>[^/]+)(?P<content>/content)?)?")

    def base_url(self, url: str) -> str:
        return f"{url}/v1"

    def short(self, generation: dict) -> dict:
        return generation | {"seconds": "4"}

    def error(self, status: int, message: str, code: str | None = None) -> dict:
        code = code or CODES.get(status)
        return {"error": {"message": message, "type": "invalid_request_error", "param": None,
                          "code": code}}  # fmt: skip

    def operation_id(self, number: int, model: str) -> str:
        return f"video_{number:04d}"

    def handle(self, fake, method, match, body, headers):
        video_id, content = match["id"], match["content"]
        if method == "POST" and video_id is None:
            fields = _multipart(body, headers.get("content-type", ""))
            model = fields["model"].decode()
            if model in fake.retired:
                return 404, self.error(404, RETIRED.format(model=model), "model_not_found")
            image = fields["input_reference"]
            size = fields.get("size", b"720x1280").decode()
            if "x".join(map(str, Image.open(io.BytesIO(image)).size)) != size:
                message = "Inpaint image must match the requested width and height"
                return 400, self.error(400, message)
            settings = {"size": size, "seconds": fields.get("seconds", b"4").decode()}
            prompt = fields["prompt"].decode()
            op = fake.submit(self, model, prompt, image, int(settings["seconds"]), settings)
            return 200, self._video(fake, op)
        op = fake.poll(video_id) if not content else fake.operations.get(video_id)
        if op is None:
            return 404, self.error(404, f"Video with id '{video_id}' not found.")
        if content:
            if op.polls_left > 0 or op.outcome != "ok":
                return 400, self.error(400, "Video is not ready")
            return 200, fake.video(op)
        return 200, self._video(fake, op)

    def _video(self, fake, op) -> dict:
        status = "queued" if op.polls_left == fake.polls else "in_progress"
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
                refused = op.outcome == "refused"
                code = "moderation_blocked" if refused else "internal_error"
                message = REFUSAL if refused else "Video generation failed"
                video |= {"status": "failed", "error": {"code": code, "message": message}}
        return video


def _multipart(body: bytes, content_type: str) -> dict[str, bytes]:
    message = email.parser.BytesParser().parsebytes(
        f"Content-Type: {content_type}\r\n\r\n".encode() + body
    )
    return {
        part.get_param("name", header="content-disposition"): part.get_payload(decode=True)
        for part in message.get_payload()
    }
