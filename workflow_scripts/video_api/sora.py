"""Sora through openai (`videos.create`, `videos.retrieve`, `videos.download_content`).

The first frame goes as `input_reference`, which Sora requires at exactly `size`: the
instance's image (its aspect checked before any job) is resized to it.
"""

from __future__ import annotations

import io
from pathlib import Path

import httpx2 as httpx
import openai
from PIL import Image

from workflow_scripts.video_api.client import Outcome, Retry, http_error, paced_hooks


class Provider:
    def __init__(self, spec, key: str, pace=None, timeout_s: float = 120.0):
        self.model, self.generation = spec.model_id, spec.generation
        hooks = paced_hooks(
            pace, lambda request: request.method == "POST" and request.url.path.endswith("/videos")
        )
        self.client = openai.OpenAI(
            api_key=key,
            base_url=spec.base_url,
            max_retries=0,
            timeout=timeout_s,
            http_client=openai.DefaultHttpxClient(event_hooks=hooks),
        )

    def submit(self, image: Path, prompt: str) -> str:
        size = self.generation["size"]
        width, height = map(int, size.split("x"))
        frame = Image.open(image).convert("RGB").resize((width, height), Image.LANCZOS)
        data = io.BytesIO()
        frame.save(data, format="PNG")
        video = self._call(
            self.client.videos.create,
            model=self.model,
            prompt=prompt,
            size=size,
            seconds=str(self.generation["seconds"]),
            input_reference=(Path(image).stem + ".png", data.getvalue(), "image/png"),
        )
        return video.id

    def check(self, video_id: str) -> Outcome | None:
        video = self._call(self.client.videos.retrieve, video_id, unknown_ok=True)
        if video.status in ("queued", "in_progress"):
            return None
        if video.status == "failed":
            error = video.error
            code, message = (error.code, error.message) if error else ("unknown", "no reason")
            refused = any(word in (code or "") for word in ("moderation", "policy"))
            kind = "refused" if refused else "failed"
            return Outcome(reason=f"{kind}: {message} ({code})")
        content = self._call(self.client.videos.download_content, video_id, unknown_ok=True)
        return Outcome(video=content.read())

    def _call(self, method, *args, unknown_ok: bool = False, **kwargs):
        try:
            return method(*args, **kwargs)
        except openai.APIStatusError as error:
            body = error.body
            message = body.get("message") if isinstance(body, dict) else None
            raise http_error(
                error.status_code, message or error.message, error.response.headers, unknown_ok
            ) from None
        except openai.APIConnectionError as error:
            unsure = not isinstance(error.__cause__, httpx.ConnectError)
            raise Retry(f"no answer: {type(error.__cause__).__name__}", unsure=unsure) from None

    def close(self) -> None:
        self.client.close()
