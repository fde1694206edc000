"""Seedream (BytePlus ModelArk: `seedream-4-5-251128`) through the Ark runtime's
`images.generate`, package byteplus-python-sdk-v2: the input image inline as a base64 data
URI (`image`), one image back as base64 (`response_format: b64_json`, with
`sequential_image_generation: disabled`, so never a series).

`size` is `2K` or `4K` (the model picks the aspect), or `WIDTHxHEIGHT` within Seedream 4.5's
bounds: 2560x1440 to 4096x4096 pixels in all, between 1:16 and 16:1. The safety filter
answers HTTP 400 with a `...SensitiveContentDetected` code, for the input image or text or
for the image it made: a refusal. Any other error answer is the service's failure.
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
    sized,
)
from workflow_scripts.paid.clients import ark_client
from workflow_scripts.paid.inputs import data_uri

REFUSAL = "SensitiveContentDetected"  # in an error code: the safety filter
PRESETS = ("2K", "4K")
PIXELS = (2560 * 1440, 4096 * 4096)  # a WIDTHxHEIGHT size's bounds, in pixels
RATIO = 16  # the widest aspect either way


class Provider(ImageProvider):
    """Seedream: images.generate's settings (one image, returned as base64)."""

    CONSOLE = "https://console.byteplus.com/ark (Billing, Bills)"

    SETTINGS = {
        "size": Setting(str, required=True),  # PRESETS, or WIDTHxHEIGHT the rules allow
        "watermark": Setting(bool),
    }

    @classmethod
    def nominal_size(cls, generation: dict) -> tuple[int, int] | None:
        """A preset: 2048*2048 (4096*4096) pixels at the input's aspect, the release's 16:9."""
        if generation["size"] in PRESETS:
            return sized(generation["size"])
        return super().nominal_size(generation)

    @classmethod
    def rule_problems(cls, model_id: str, generation: dict) -> list[str]:
        size = generation["size"]
        if size in PRESETS:
            return []
        match = re.fullmatch(r"(\d+)x(\d+)", size)
        width, height = (int(match[1]), int(match[2])) if match else (0, 0)
        within = PIXELS[0] <= width * height <= PIXELS[1]
        if within and max(width, height) <= RATIO * min(width, height):
            return []
        allowed = (
            f"one of {', '.join(PRESETS)}, or WIDTHxHEIGHT of 2560x1440 to 4096x4096 pixels "
            f"in all, between 1:{RATIO} and {RATIO}:1"
        )
        return [f"size: {size!r} is not allowed ({allowed})"]

    def connect(self, key: str, base_url: str | None, hooks: dict, timeout_s: float) -> None:
        self.client, _ = ark_client(key, base_url, hooks, timeout_s)

    def request(self, image: Path, prompt: str) -> bytes:
        from byteplussdkarkruntime._exceptions import ArkAPIConnectionError, ArkAPIStatusError

        try:
            answer = self.client.images.generate(
                model=self.model_id, prompt=prompt, image=data_uri(image),
                response_format="b64_json", sequential_image_generation="disabled",
                **self.generation,
            )  # fmt: skip
        except ArkAPIStatusError as error:
            body = error.body if isinstance(error.body, dict) else {}
            message, code = body.get("message") or error.message, error.code
            if error.status_code == 400 and REFUSAL in (code or ""):
                raise Refused(f"{message} ({code})", billed=True) from None
            headers = error.response.headers
            raise self.error_for(error.status_code, message, headers, code) from None
        except ArkAPIConnectionError as error:
            raise Retry.unanswered(error.__cause__ or error) from None
        if not answer.data or not answer.data[0].b64_json:
            raise NoImage("the answer holds no image (data[0].b64_json)", reply_bytes(answer))
        return from_base64(answer.data[0].b64_json, answer)

    def close(self) -> None:
        self.client.close()
