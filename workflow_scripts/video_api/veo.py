"""Veo through google-genai on Vertex AI (`models.generate_videos`, `operations.get`).

The SDK offers video generation only in Vertex AI mode (an express-mode API key, or a
project's credentials); a done operation carries the video inline (no `output_gcs_uri` is
asked for), or the safety filter's reasons (`rai_media_filtered_reasons`), or an `error`.
"""

from __future__ import annotations

from pathlib import Path

from workflow_scripts.common.http import ServiceError
from workflow_scripts.video_api.provider import (
    Outcome,
    Retry,
    Setting,
    VideoProvider,
    image_payload,
)

SUBMIT = ":predictLongRunning"
HEIGHTS = {"720p": 720, "1080p": 1080}


class Provider(VideoProvider):
    """Vertex AI's Veo 3.1 (image to video): GenerateVideosConfig's fields."""

    CONSOLE = "https://console.cloud.google.com/billing (Vertex AI, Reports)"

    SETTINGS = {
        "aspect_ratio": Setting(str, ("16:9", "9:16"), required=True),
        "resolution": Setting(str, tuple(HEIGHTS)),
        "duration_seconds": Setting(int, (4, 6, 8), required=True),
        "negative_prompt": Setting(str),
        "seed": Setting(int),
        "generate_audio": Setting(bool),
        "enhance_prompt": Setting(bool),
        "person_generation": Setting(str, ("allow_adult", "dont_allow")),
        "resize_mode": Setting(str, ("pad", "crop")),
    }
    SIZE_SETTING = "aspect_ratio"
    DURATION_SETTING = "duration_seconds"
    FPS = 24  # Veo's documented rate

    @classmethod
    def resolution(cls, generation: dict) -> str:
        return generation.get("resolution", "720p")

    @classmethod
    def frame_size(cls, generation: dict) -> tuple[int, int]:
        short = HEIGHTS[cls.resolution(generation)]
        long = short * 16 // 9
        return (long, short) if generation["aspect_ratio"] == "16:9" else (short, long)

    @classmethod
    def rule_problems(cls, model_id: str, generation: dict) -> list[str]:
        resolution, seconds = cls.resolution(generation), generation["duration_seconds"]
        if resolution != "720p" and seconds != 8:
            return [f"duration_seconds: {seconds} is refused at resolution {resolution} (8 only)"]
        return []

    def connect(self, key: str, base_url: str | None, hooks: dict, timeout_s: float) -> None:
        import httpx2
        from google import genai
        from google.genai import types  # the SDK: a job's import only (see provider.py)

        self.http = httpx2.Client(event_hooks=hooks, timeout=timeout_s)
        options = types.HttpOptions(
            base_url=base_url, timeout=round(timeout_s * 1000), httpx_client=self.http
        )
        self.client = genai.Client(vertexai=True, api_key=key, http_options=options)

    def submits(self, request) -> bool:
        return request.url.path.endswith(SUBMIT)

    def submit(self, image: Path, prompt: str) -> str:
        from google.genai import types

        data, mime = image_payload(image)
        frame = types.Image(image_bytes=data, mime_type=mime)
        source = types.GenerateVideosSource(prompt=prompt, image=frame)
        config = types.GenerateVideosConfig(number_of_videos=1, **self.generation)
        operation = self._call(
            self.client.models.generate_videos, model=self.model_id, source=source, config=config
        )
        return operation.name

    def poll(self, operation_id: str) -> Outcome | None:
        from google.genai import types

        operation = self._call(
            self.client.operations.get,
            types.GenerateVideosOperation(name=operation_id),
            known_id=True,
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
        return Outcome(video=self.download(videos[0].video))

    def download(self, video) -> bytes:
        """The video's bytes, which come inline (no storage bucket is asked for)."""
        if not video.video_bytes:
            raise ServiceError(f"the video came as a link ({video.uri}), not inline")
        return video.video_bytes

    def _call(self, method, *args, known_id: bool = False, **kwargs):
        import httpx2
        from google.genai import errors

        try:
            return method(*args, **kwargs)
        except errors.APIError as error:
            headers = error.response.headers if error.response is not None else {}
            message = error.message or str(error.status)
            raise self.error_for(error.code, message, headers, known_id=known_id) from None
        except httpx2.TransportError as error:
            raise Retry.unanswered(error) from None

    def close(self) -> None:
        self.client.close()
        self.http.close()
