"""Qwen-Image (Alibaba Cloud Model Studio: `qwen-image-3.0-pro`, `qwen-image-2.0-pro`,
`qwen-image-edit-plus`, ...) through dashscope's 2.0 client: one synchronous request to the
multimodal-generation service, sent by the client's own transport (its httpx client, our
pacing hook attached, its retries off) and checked by the SDK's `check_response`. Neither
the 2.0 client's chat (it keeps only a reply's text parts) nor its `images` resource (it
routes only Wan models to this service) reads the answer's image.

The request is one user message: the input image inline as a base64 data URI (which the
service takes for Qwen-Image's `image` parts), then the prompt; `parameters` holds `n: 1` and
the entry's settings under the service's names. The answer names the image by a signed link
(kept 24 h) in `output.choices[0].message.content`; it is fetched without the key (a GET,
sent again where it fails), and where it still cannot be read, the image was made and
billed: the job fails as unsure, never asking again on its own. The content inspection
answers HTTP 400 `DataInspectionFailed`, for the input or for the image made: a refusal.

`size` is `WIDTH*HEIGHT`: for Qwen-Image 2.0 and 3.0, 512*512 to 2048*2048 pixels in all
(3.0: between 1:8 and 8:1); for Qwen-Image-Edit Plus and Max, each side 512 to 2048. Left
unset, Qwen-Image 2.0 and 3.0 make the input image's size, the edit models about 1024*1024
pixels at the input's aspect.
"""

from __future__ import annotations

import re
from pathlib import Path

from workflow_scripts.common.http import ServiceError
from workflow_scripts.image_api.provider import (
    ATTEMPTS,
    ImageProvider,
    NoImage,
    Refused,
    Retry,
    Setting,
)
from workflow_scripts.paid.clients import dashscope_client, dashscope_refusal
from workflow_scripts.paid.download import LinkGone, fetch
from workflow_scripts.paid.inputs import data_uri

SERVICE = "/services/aigc/multimodal-generation/generation"
PIXELS = (512 * 512, 2048 * 2048)  # Qwen-Image 2.0 and 3.0: a size's bounds, in pixels
SIDES = (512, 2048)  # Qwen-Image-Edit Plus and Max: each side's bounds
RATIO = 8  # Qwen-Image 3.0's widest aspect either way


def size_problem(model_id: str, size: str) -> str | None:
    """Why `size` is not one `model_id` makes (None: it is, or the model's rule is unknown)."""
    match = re.fullmatch(r"(\d+)\*(\d+)", size)
    if not match:
        return f"size: {size!r} is not WIDTH*HEIGHT (the service's form, e.g. 2560*1440)"
    width, height = int(match[1]), int(match[2])
    if model_id.startswith(("qwen-image-edit-plus", "qwen-image-edit-max")):
        if all(SIDES[0] <= side <= SIDES[1] for side in (width, height)):
            return None
        return f"size: {size!r} is not allowed (each side 512 to 2048)"
    if not model_id.startswith(("qwen-image-2.0", "qwen-image-3.0")):
        return None
    ratio = RATIO if model_id.startswith("qwen-image-3.0") else None
    narrow = ratio is None or max(width, height) <= ratio * min(width, height)
    if PIXELS[0] <= width * height <= PIXELS[1] and narrow:
        return None
    aspect = f", between 1:{ratio} and {ratio}:1" if ratio else ""
    return f"size: {size!r} is not allowed (512*512 to 2048*2048 pixels in all{aspect})"


class Provider(ImageProvider):
    """Qwen-Image on Model Studio: the multimodal-generation service's parameters (one image,
    as a signed link)."""

    CONSOLE = "https://modelstudio.console.alibabacloud.com (Billing, Usage)"

    SETTINGS = {
        "size": Setting(str),  # WIDTH*HEIGHT within the model's rule
        "seed": Setting(int),
        "prompt_extend": Setting(bool),  # the service rewrites the prompt where true
        "watermark": Setting(bool),
        "negative_prompt": Setting(str),
    }

    @classmethod
    def rule_problems(cls, model_id: str, generation: dict) -> list[str]:
        problem = "size" in generation and size_problem(model_id, generation["size"])
        return [problem] if problem else []

    def connect(self, key: str, base_url: str | None, hooks: dict, timeout_s: float) -> None:
        import httpx  # the SDK's (dashscope 2.0 sends through httpx)

        self.client = dashscope_client(key, base_url, hooks, timeout_s)
        self.downloads = httpx.Client(timeout=timeout_s, follow_redirects=True)  # no key

    def request(self, image: Path, prompt: str) -> bytes:
        from dashscope.v2 import errors

        content = [{"image": data_uri(image)}, {"text": prompt}]
        body = {
            "model": self.model_id,
            "input": {"messages": [{"role": "user", "content": content}]},
            "parameters": {"n": 1, **self.generation},
        }
        try:
            answer = self.client.transport.request("POST", SERVICE, json=body)
            errors.check_response(answer)
        except errors.APIConnectionError as error:  # the SDK's, from httpx's (its cause)
            raise Retry.unanswered(error.__cause__ or error) from None
        except errors.APIStatusError as error:
            status, code, message = error.status_code, error.code, error.message
            if status == 400 and dashscope_refusal(code):
                raise Refused(f"{message} ({code})", billed=True) from None
            raise self.error_for(status, message, error.headers, code) from None
        choices = (answer.json().get("output") or {}).get("choices") or [{}]
        parts = (choices[0].get("message") or {}).get("content") or []
        links = [part["image"] for part in parts if isinstance(part, dict) and part.get("image")]
        if not links:
            reason = "the answer holds no image (output.choices[0].message.content)"
            raise NoImage(reason, answer.content)
        return self.download(links[0])

    def download(self, url: str) -> bytes:
        """The image behind the answer's signed link, fetched without the key (`fetch`: sent
        again where it failed, a GET costs nothing); where it still fails or the link is
        gone, the image was made and billed: unsure, never asked for again on its own."""
        try:
            return fetch(self.downloads, url, "the image's link", ATTEMPTS)
        except (LinkGone, Retry, ServiceError) as error:
            reason = f"the image was made, but its link could not be read ({error})"
            raise Retry(reason, unsure=True) from None

    def close(self) -> None:
        self.client.close()
        self.downloads.close()
