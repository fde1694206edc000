"""Any OpenAI-compatible chat endpoint through the openai SDK."""

from __future__ import annotations

import base64
from typing import TYPE_CHECKING

import openai

from workflow_scripts.common.http import request_hooks, retry_after
from workflow_scripts.judge.backends import (
    MAX_OUTPUT_TOKENS,
    Fault,
    describe_error,
    http_fault,
    usage_counts,
)

if TYPE_CHECKING:
    from workflow_scripts.judge.client import Request


class Backend:
    """Any OpenAI-compatible chat endpoint (OpenAI, vLLM, SGLang ...).

    Replies are constrained with `response_format` json_schema, which vLLM enforces by
    guided decoding (json_object would only ask for some JSON).
    """

    SETTINGS = ("temperature",)

    def __init__(self, config: dict, key: str, before_send=None):
        self.model, self.temperature = config["model"], config["temperature"]
        self.client = openai.AsyncOpenAI(
            api_key=key,
            base_url=config["base_url"],
            max_retries=0,
            timeout=config["timeout_s"],
            http_client=openai.DefaultAsyncHttpxClient(event_hooks=request_hooks(before_send)),
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
            hint = retry_after(error.response.headers, body)
            raise http_fault(error.status_code, message or error.message, hint) from error
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
