"""Gemini's image models (Nano Banana Pro: `gemini-3-pro-image-preview`) through google-genai
on the Gemini API: `models.generate_content` with the input image and the prompt, asked
for an image only (`response_modalities=["IMAGE"]`, `ImageConfig`).

The reply's candidate holds the image inline, possibly beside a text part and, where the
model thinks, interim images marked `thought` (skipped: the last other image is the
answer). A blocked prompt (`prompt_feedback.block_reason`) or a candidate that ends
without an image (IMAGE_SAFETY, PROHIBITED_CONTENT, NO_IMAGE, ...) is a refusal (its
`finishMessage` does not come through: google-genai drops it from Gemini API replies).
"""

from __future__ import annotations

from pathlib import Path

from workflow_scripts.image_api.provider import ImageProvider, Refused, Retry, Setting, sized
from workflow_scripts.video_api.provider import image_payload

# ImageConfig's values as google-genai documents them
ASPECTS = ("1:1", "2:3", "3:2", "3:4", "4:3", "9:16", "16:9", "21:9")
SIZES = ("1K", "2K", "4K")


def _name(value) -> str:
    return str(getattr(value, "value", value))


class Provider(ImageProvider):
    """Gemini image generation: ImageConfig's fields, and the request's `seed`."""

    SETTINGS = {
        "aspect_ratio": Setting(str, ASPECTS, required=True),
        "image_size": Setting(str, SIZES),
        "seed": Setting(int),
    }

    @classmethod
    def nominal_size(cls, generation: dict) -> tuple[int, int]:
        """About 1024*1024 pixels a K of `image_size` (1K unset) at `aspect_ratio`."""
        across, down = map(int, generation["aspect_ratio"].split(":"))
        return sized(generation.get("image_size", "1K"), across / down)

    def connect(self, key: str, base_url: str | None, hooks: dict, timeout_s: float) -> None:
        import httpx2
        from google import genai
        from google.genai import types  # the SDK: a job's import only

        self.http = httpx2.Client(event_hooks=hooks, timeout=timeout_s)
        options = types.HttpOptions(
            base_url=base_url,
            api_version="v1beta",
            timeout=round(timeout_s * 1000),
            retry_options=None,
            httpx_client=self.http,
        )
        self.client = genai.Client(api_key=key, http_options=options)

    def request(self, image: Path, prompt: str) -> bytes:
        from google.genai import types

        settings = dict(self.generation)
        seed = settings.pop("seed", None)
        config = types.GenerateContentConfig(
            response_modalities=["IMAGE"], image_config=types.ImageConfig(**settings), seed=seed
        )
        data, mime = image_payload(image)
        source = types.Part.from_bytes(data=data, mime_type=mime)
        response = self._call(model=self.model_id, contents=[source, prompt], config=config)
        feedback = response.prompt_feedback
        if feedback is not None and feedback.block_reason:
            why = feedback.block_reason_message or "the prompt was blocked"
            raise Refused(f"{_name(feedback.block_reason)}: {why}")
        candidate = (response.candidates or [None])[0]
        content = candidate and candidate.content
        parts = [part for part in (content and content.parts) or [] if not part.thought]
        images = [
            part.inline_data.data
            for part in parts
            if part.inline_data and (part.inline_data.mime_type or "").startswith("image/")
        ]
        if images:
            return images[-1]
        finish = _name(candidate.finish_reason) if candidate and candidate.finish_reason else None
        text = " ".join(part.text for part in parts if part.text)
        why = (candidate and candidate.finish_message) or text or "no image in the answer"
        raise Refused(f"{finish or 'no candidate'}: {why}"[:300])

    def _call(self, **request):
        import httpx2
        from google.genai import errors

        try:
            return self.client.models.generate_content(**request)
        except errors.APIError as error:
            headers = error.response.headers if error.response is not None else {}
            message = error.message or str(error.status)
            raise self.error_for(error.code, message, headers, details=error.details) from None
        except httpx2.TransportError as error:
            raise Retry.unanswered(error) from None

    def close(self) -> None:
        self.client.close()
        self.http.close()
