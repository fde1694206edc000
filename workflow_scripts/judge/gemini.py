"""Gemini's API through google-genai (or any server speaking its REST protocol)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from google import genai
from google.genai import errors as genai_errors
from google.genai import types

from workflow_scripts.common.http import request_hooks, retry_after
from workflow_scripts.judge.backends import (
    BLOCKED,
    MAX_OUTPUT_TOKENS,
    Fault,
    describe_error,
    http_fault,
    name_of,
    usage_counts,
)

try:  # the HTTP library under google-genai >= 3
    import httpx2 as httpx
except ImportError:  # older SDKs
    import httpx

if TYPE_CHECKING:
    from workflow_scripts.judge.client import Request


class Backend:
    """Gemini's `generateContent`, asked for JSON under the request's schema."""

    SETTINGS = ("temperature", "media_resolution", "thinking_level")

    def __init__(self, config: dict, key: str, before_send=None):
        self.model = config["model"]
        # Our own httpx client: its hook paces requests, and it keeps the SDK off aiohttp.
        self.http = httpx.AsyncClient(event_hooks=request_hooks(before_send))
        options = types.HttpOptions(
            base_url=config["base_url"],
            api_version="v1beta",
            timeout=round(config["timeout_s"] * 1000),
            retry_options=None,
            httpx_async_client=self.http,
        )
        self.client = genai.Client(api_key=key, http_options=options)
        resolution, thinking = config["media_resolution"], config["thinking_level"]
        self.settings = {
            "response_mime_type": "application/json",
            "max_output_tokens": MAX_OUTPUT_TOKENS,
            "temperature": config["temperature"],
            "media_resolution": f"MEDIA_RESOLUTION_{resolution.upper()}" if resolution else None,
            "thinking_config": types.ThinkingConfig(thinking_level=thinking.upper())
            if thinking
            else None,
        }

    async def generate(self, request: Request) -> tuple[str, dict, str | None]:
        contents = [
            types.Part.from_text(text=part.text)
            if part.image is None
            else types.Part.from_bytes(data=part.image, mime_type="image/jpeg")
            for part in request.parts
        ]
        config = types.GenerateContentConfig(
            **self.settings, response_json_schema=request.schema, system_instruction=request.system
        )
        try:
            response = await self.client.aio.models.generate_content(
                model=self.model, contents=contents, config=config
            )
        except genai_errors.APIError as error:
            headers = error.response.headers if error.response is not None else {}
            hint = retry_after(headers, error.details)
            raise http_fault(error.code, error.message or name_of(error.status), hint) from error
        except httpx.TransportError as error:
            raise Fault(f"transport error: {describe_error(error)}", service=True) from error
        meta = response.usage_metadata or types.GenerateContentResponseUsageMetadata()
        usage = usage_counts(
            meta.prompt_token_count,
            meta.candidates_token_count,
            meta.thoughts_token_count,
            meta.cached_content_token_count,
            meta.total_token_count,
        )
        feedback = response.prompt_feedback
        if feedback is not None and feedback.block_reason:
            raise Fault(f"blocked: {name_of(feedback.block_reason)}", usage=usage)
        if not response.candidates:
            raise Fault("empty candidate list", usage=usage)
        candidate = response.candidates[0]
        finish = name_of(candidate.finish_reason or "STOP")
        if finish != "STOP":
            prefix = "blocked" if finish in BLOCKED else "finish_reason"
            raise Fault(f"{prefix}: {finish}", usage=usage)
        parts = candidate.content.parts if candidate.content and candidate.content.parts else []
        text = "".join(part.text for part in parts if part.text and not part.thought)
        return text, usage, response.model_version

    async def aclose(self) -> None:
        await self.client.aio.aclose()
        await self.http.aclose()  # the SDK leaves a client it was given open
