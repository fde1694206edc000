"""Sora through openai (`videos.create`, `videos.retrieve`, `videos.download_content`).

The first frame goes as `input_reference`, which Sora requires at exactly `size`: the
instance's image (its aspect checked before any job) is resized to it. The locked openai
SDK marks the Sora API as shut down since 2026-09-24: the service's answer for a model it
no longer serves (HTTP 404 with error code `model_not_found`, as OpenAI answers for every
model past its shutdown date, or 410) stops the job with a `RetiredModel` line.
"""

from __future__ import annotations

import io
from pathlib import Path

from workflow_scripts.paid.clients import openai_client
from workflow_scripts.video_api.provider import Outcome, Retry, Setting, VideoProvider

REFUSALS = ("moderation", "policy")  # in a failed video's error code: a refusal
LARGE = ("1792x1024", "1024x1792")  # sora-2-pro only


class Provider(VideoProvider):
    """OpenAI's Sora 2: videos.create's parameters."""

    CONSOLE = "https://platform.openai.com/usage"

    SETTINGS = {
        "size": Setting(str, ("1280x720", "720x1280", "1792x1024", "1024x1792"), required=True),
        "seconds": Setting(str, ("4", "8", "12"), required=True),
    }
    SIZE_SETTING = "size"
    DURATION_SETTING = "seconds"
    FPS = 30  # not in Sora's API: assumed

    @classmethod
    def resolution(cls, generation: dict) -> str:
        return generation["size"]

    @classmethod
    def frame_size(cls, generation: dict) -> tuple[int, int]:
        width, height = generation["size"].split("x")
        return int(width), int(height)

    @classmethod
    def rule_problems(cls, model_id: str, generation: dict) -> list[str]:
        if generation["size"] in LARGE and "pro" not in model_id:
            return [f"size: {generation['size']!r} needs sora-2-pro, not {model_id!r} "
                    "(1280x720, 720x1280)"]  # fmt: skip
        return []

    def connect(self, key: str, base_url: str | None, hooks: dict, timeout_s: float) -> None:
        self.client = openai_client(key, base_url, hooks, timeout_s)

    def submits(self, request) -> bool:
        return request.method == "POST" and request.url.path.endswith("/videos")

    def submit(self, image: Path, prompt: str) -> str:
        from PIL import Image

        from vgi_models.input_image import load_rgb

        size = self.generation["size"]
        frame = load_rgb(image)
        frame = frame.resize(self.frame_size(self.generation), Image.LANCZOS)
        data = io.BytesIO()
        frame.save(data, format="PNG")
        video = self._call(
            self.client.videos.create,
            model=self.model_id,
            prompt=prompt,
            size=size,
            seconds=str(self.generation["seconds"]),
            input_reference=(Path(image).stem + ".png", data.getvalue(), "image/png"),
        )
        return video.id

    def poll(self, video_id: str) -> Outcome | None:
        video = self._call(self.client.videos.retrieve, video_id, known_id=True)
        if video.status in ("queued", "in_progress"):
            return None
        if video.status == "failed":
            error = video.error
            code, message = (error.code, error.message) if error else ("unknown", "no reason")
            kind = "refused" if any(word in (code or "") for word in REFUSALS) else "failed"
            return Outcome(reason=f"{kind}: {message} ({code})")
        return Outcome(video=self.download(video_id))

    def download(self, video_id: str) -> bytes:
        return self._call(self.client.videos.download_content, video_id, known_id=True).read()

    def retired(self, status: int, code: str | None) -> bool:
        return status == 410 or (status == 404 and code == "model_not_found")

    def _call(self, method, *args, known_id: bool = False, **kwargs):
        import openai

        try:
            return method(*args, **kwargs)
        except openai.APIStatusError as error:
            body = error.body
            message = body.get("message") if isinstance(body, dict) else None
            raise self.error_for(
                error.status_code, message or error.message, error.response.headers,
                error.code, known_id,
            ) from None  # fmt: skip
        except openai.APIConnectionError as error:
            cause = error.__cause__ or error
            raise Retry.unanswered(cause) from None

    def close(self) -> None:
        self.client.close()
