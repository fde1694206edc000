"""The VLM backends behind `VLMClient`: Gemini through google-genai, and any
OpenAI-compatible endpoint (e.g. vLLM). Each turns a `Request` into the reply's text, its
token usage and the model version the server reports, and raises `Fault` for what is
worth another attempt. Both cap the reply at MAX_OUTPUT_TOKENS, as the official judge."""

from __future__ import annotations

import base64
import json
import re
from typing import TYPE_CHECKING

import openai
from google import genai
from google.genai import errors as genai_errors
from google.genai import types

try:  # the HTTP library under google-genai >= 3 and openai >= 3
    from httpx2 import TransportError
except ImportError:  # older SDKs
    from httpx import TransportError

if TYPE_CHECKING:
    from workflow_scripts.judge.client import Request

MAX_OUTPUT_TOKENS = 8000
USAGE_KEYS = ("prompt", "candidates", "thoughts", "cached", "total")
BLOCKED = {"SAFETY", "PROHIBITED_CONTENT", "BLOCKLIST", "SPII", "RECITATION", "IMAGE_SAFETY"}


class JudgeCallError(Exception):
    """A call that failed for good; `reason` says what finally failed."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


class ServiceError(Exception):
    """The service itself failed (key refused, quota exhausted, endpoint unreachable):
    no further call of the job can succeed, so the job fails and writes nothing."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


class Fault(Exception):
    """One failed attempt worth another; `usage` is what it cost, `retry_after` a hint.

    `service`: the fault is the service's (rate limit, server error, no connection), not
    the reply's; if the last attempt fails so, the call raises `ServiceError`.
    """

    def __init__(
        self,
        reason: str,
        retry_after: float | None = None,
        usage: dict | None = None,
        service: bool = False,
    ):
        super().__init__(reason)
        self.reason, self.retry_after, self.usage = reason, retry_after, usage
        self.service = service


def usage_counts(prompt=0, candidates=0, thoughts=0, cached=0, total=0) -> dict:
    """Token counts under USAGE_KEYS; None (not reported) counts as 0."""
    counts = (prompt, candidates, thoughts, cached, total)
    return {key: count or 0 for key, count in zip(USAGE_KEYS, counts, strict=True)}


def _name(value) -> str:
    return str(getattr(value, "value", value))


def _retry_hint(headers, body) -> float | None:
    """Seconds the server asked to wait: Retry-After, Gemini's RetryInfo, or 'retry in Xs'."""
    text = body if isinstance(body, str) else json.dumps(body, default=str)
    sources = (
        (r"^\s*(\d+(?:\.\d+)?)\s*$", (headers or {}).get("retry-after", "")),
        (r'"retryDelay":\s*"(\d+(?:\.\d+)?)s"', text),
        (r"retry in (\d+(?:\.\d+)?)\s*s", text),
    )
    for pattern, source in sources:
        if match := re.search(pattern, source, re.IGNORECASE):
            return float(match[1])
    return None


def describe_error(error: Exception) -> str:
    """'ReadTimeout: timed out', or the bare class name when the message is empty."""
    return f"{type(error).__name__}: {error}".rstrip(": ")


def _http_fault(code: int, message: str, hint: float | None) -> Exception:
    """408, 429 and 5xx are worth another attempt; 401, 403, 404 and a refused key fail the
    service at once; any other 4xx is about this request alone."""
    reason = f"HTTP {code}: {message}"[:300]
    if code in (408, 429) or code >= 500:
        return Fault(reason, hint, service=True)
    if code in (401, 403, 404) or re.search(r"api[ _]?key", message, re.IGNORECASE):
        return ServiceError(reason)
    return JudgeCallError(reason)


class _Gemini:
    """Gemini's API through google-genai (or any server speaking its REST protocol)."""

    SETTINGS = ("temperature", "media_resolution", "thinking_level")

    def __init__(self, config: dict, key: str):
        self.model = config["model"]
        options = types.HttpOptions(
            base_url=config["base_url"],
            api_version="v1beta",
            timeout=round(config["timeout_s"] * 1000),
            retry_options=None,
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
            hint = _retry_hint(headers, error.details)
            raise _http_fault(error.code, error.message or _name(error.status), hint) from error
        except TransportError as error:
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
            raise Fault(f"blocked: {_name(feedback.block_reason)}", usage=usage)
        if not response.candidates:
            raise Fault("empty candidate list", usage=usage)
        candidate = response.candidates[0]
        finish = _name(candidate.finish_reason or "STOP")
        if finish != "STOP":
            prefix = "blocked" if finish in BLOCKED else "finish_reason"
            raise Fault(f"{prefix}: {finish}", usage=usage)
        parts = candidate.content.parts if candidate.content and candidate.content.parts else []
        text = "".join(part.text for part in parts if part.text and not part.thought)
        return text, usage, response.model_version

    async def aclose(self) -> None:
        await self.client.aio.aclose()


class _OpenAI:
    """Any OpenAI-compatible chat endpoint (OpenAI, vLLM, SGLang ...).

    Replies are constrained with `response_format` json_schema, which vLLM enforces by
    guided decoding (json_object would only ask for some JSON).
    """

    SETTINGS = ("temperature",)

    def __init__(self, config: dict, key: str):
        self.model, self.temperature = config["model"], config["temperature"]
        self.client = openai.AsyncOpenAI(
            api_key=key, base_url=config["base_url"], max_retries=0, timeout=config["timeout_s"]
        )

    async def generate(self, request: Request) -> tuple[str, dict, str | None]:
        content = [
            {"type": "text", "text": part.text}
            if part.image is None
            else {"type": "image_url", "image_url": {"url": _data_url(part.image)}}
            for part in request.parts
        ]
        messages = [{"role": "system", "content": request.system}] if request.system else []
        messages.append({"role": "user", "content": content})
        response_format = {
            "type": "json_schema",
            "json_schema": {"name": request.kind, "schema": request.schema},
        }
        extra = {} if self.temperature is None else {"temperature": self.temperature}
        try:
            response = await self.client.chat.completions.create(
                model=self.model,
                messages=messages,
                response_format=response_format,
                max_tokens=MAX_OUTPUT_TOKENS,
                **extra,
            )
        except openai.APIStatusError as error:
            body = error.body
            message = body.get("message") if isinstance(body, dict) else None
            hint = _retry_hint(error.response.headers, body)
            raise _http_fault(error.status_code, message or error.message, hint) from error
        except openai.APIConnectionError as error:
            raise Fault(
                f"transport error: {describe_error(error.__cause__ or error)}", service=True
            ) from error
        meta = response.usage
        usage = usage_counts()
        if meta is not None:
            completion, prompt = meta.completion_tokens_details, meta.prompt_tokens_details
            usage = usage_counts(
                meta.prompt_tokens,
                meta.completion_tokens,
                completion and completion.reasoning_tokens,
                prompt and prompt.cached_tokens,
                meta.total_tokens,
            )
        if not response.choices:
            raise Fault("empty candidate list", usage=usage)
        choice = response.choices[0]
        if choice.finish_reason == "content_filter" or choice.message.refusal:
            raise Fault(f"blocked: {choice.finish_reason}", usage=usage)
        if choice.finish_reason not in (None, "stop"):
            raise Fault(f"finish_reason: {choice.finish_reason}", usage=usage)
        return choice.message.content or "", usage, response.model

    async def aclose(self) -> None:
        await self.client.close()


def _data_url(jpeg: bytes) -> str:
    return "data:image/jpeg;base64," + base64.b64encode(jpeg).decode("ascii")


BACKENDS = {"gemini": _Gemini, "openai": _OpenAI}
