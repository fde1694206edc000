"""Veo through google-genai on Vertex AI (`models.generate_videos`, `operations.get`).

The SDK offers video generation only in Vertex AI mode (an express-mode API key, or a
project's credentials); a done operation carries the video inline (no `output_gcs_uri` is
asked for), or the safety filter's reasons (`rai_media_filtered_reasons`), or an `error`.
"""

from __future__ import annotations

import mimetypes
from pathlib import Path

import httpx2 as httpx
from google import genai
from google.genai import errors, types

from workflow_scripts.video_api.client import (
    Outcome,
    Retry,
    ServiceError,
    http_error,
    paced_hooks,
)

SUBMIT = ":predictLongRunning"


class Provider:
    def __init__(self, spec, key: str, pace=None, timeout_s: float = 120.0):
        self.model, self.generation = spec.model_id, spec.generation
        hooks = paced_hooks(pace, lambda request: request.url.path.endswith(SUBMIT))
        self.http = httpx.Client(event_hooks=hooks, timeout=timeout_s)
        options = types.HttpOptions(
            base_url=spec.base_url, timeout=round(timeout_s * 1000), httpx_client=self.http
        )
        self.client = genai.Client(vertexai=True, api_key=key, http_options=options)

    def submit(self, image: Path, prompt: str) -> str:
        mime = mimetypes.guess_type(str(image))[0] or "image/png"
        source = types.GenerateVideosSource(
            prompt=prompt, image=types.Image(image_bytes=Path(image).read_bytes(), mime_type=mime)
        )
        config = types.GenerateVideosConfig(number_of_videos=1, **self.generation)
        operation = self._call(
            self.client.models.generate_videos, model=self.model, source=source, config=config
        )
        return operation.name

    def check(self, operation_id: str) -> Outcome | None:
        operation = self._call(
            self.client.operations.get,
            types.GenerateVideosOperation(name=operation_id),
            unknown_ok=True,
        )
        if not operation.done:
            return None
        if operation.error:
            return Outcome(reason=f"failed: {operation.error.get('message', operation.error)}")
        result = operation.result
        videos = result.generated_videos if result else None
        if not videos:
            reasons = (result.rai_media_filtered_reasons if result else None) or ["no video"]
            return Outcome(reason=f"refused: {'; '.join(reasons)}")
        video = videos[0].video
        if not video.video_bytes:
            raise ServiceError(f"the video came as a link ({video.uri}), not inline")
        return Outcome(video=video.video_bytes)

    def _call(self, method, *args, unknown_ok: bool = False, **kwargs):
        try:
            return method(*args, **kwargs)
        except errors.APIError as error:
            headers = error.response.headers if error.response is not None else {}
            raise http_error(
                error.code, error.message or str(error.status), headers, unknown_ok
            ) from None
        except httpx.ConnectError as error:
            raise Retry(f"connection failed: {error}") from None
        except httpx.TransportError as error:
            raise Retry(f"transport error: {type(error).__name__}", unsure=True) from None

    def close(self) -> None:
        self.client.close()
        self.http.close()
