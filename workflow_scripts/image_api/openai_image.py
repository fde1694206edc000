"""OpenAI's GPT Image models (`gpt-image-2`) through openai: `images.edit` with the input
image and the prompt, one image back as base64 (`data[0].b64_json`).

A refusal comes as HTTP 400 with error code `moderation_blocked` (the safety system), or
as a content policy's code; any other error answer is the service's failure.
"""

from __future__ import annotations

import re
from pathlib import Path

from workflow_scripts.image_api.provider import (
    ImageProvider,
    NoImage,
    Refused,
    Retry,
    Setting,
    from_base64,
    reply_bytes,
)
from workflow_scripts.paid.clients import openai_client
from workflow_scripts.paid.inputs import image_mime, image_payload

REFUSALS = ("moderation_blocked", "content_policy_violation")
STANDARD = ("1024x1024", "1536x1024", "1024x1536", "auto")
MAX_SIDE, MAX_PIXELS = 3840, 3840 * 2160


class Provider(ImageProvider):
    """GPT Image: images.edit's parameters (`n` is always 1)."""

    CONSOLE = "https://platform.openai.com/usage"

    SETTINGS = {
        "size": Setting(str, required=True),  # STANDARD, or any WxH the rules allow
        "quality": Setting(str, ("low", "medium", "high", "auto")),
        "background": Setting(str, ("opaque", "transparent", "auto")),
        "output_format": Setting(str, ("png", "jpeg", "webp")),
    }

    @classmethod
    def rule_problems(cls, model_id: str, generation: dict) -> list[str]:
        size = generation["size"]
        if size in STANDARD:
            return []
        allowed = (
            f"one of {', '.join(STANDARD)}, or WIDTHxHEIGHT in multiples of 16, at most "
            f"{MAX_SIDE} a side and 3840x2160 in all, between 1:3 and 3:1"
        )
        match = re.fullmatch(r"(\d+)x(\d+)", size)
        if not match:
            return [f"size: {size!r} is not allowed ({allowed})"]
        width, height = int(match[1]), int(match[2])
        fits = (
            width % 16 == 0
            and height % 16 == 0
            and max(width, height) <= MAX_SIDE
            and width * height <= MAX_PIXELS
            and max(width, height) <= 3 * min(width, height)
        )
        return [] if fits else [f"size: {size!r} is not allowed ({allowed})"]

    def connect(self, key: str, base_url: str | None, hooks: dict, timeout_s: float) -> None:
        self.client = openai_client(key, base_url, hooks, timeout_s)

    def request(self, image: Path, prompt: str) -> bytes:
        import openai

        data, mime = image_payload(image)
        name = image.name if mime == image_mime(image) else f"{image.stem}.png"
        source = (name, data, mime)
        try:
            answer = self.client.images.edit(
                model=self.model_id, image=source, prompt=prompt, n=1, **self.generation
            )
        except openai.APIStatusError as error:
            body = error.body
            message = (body.get("message") if isinstance(body, dict) else None) or error.message
            if error.status_code == 400 and error.code in REFUSALS:
                raise Refused(f"{message} ({error.code})", billed=True) from None
            headers = error.response.headers
            raise self.error_for(error.status_code, message, headers, error.code) from None
        except openai.APIConnectionError as error:
            cause = error.__cause__ or error
            raise Retry.unanswered(cause) from None
        if not answer.data or not answer.data[0].b64_json:
            raise NoImage("the answer holds no image (data[0].b64_json)", reply_bytes(answer))
        return from_base64(answer.data[0].b64_json, answer)

    def close(self) -> None:
        self.client.close()
