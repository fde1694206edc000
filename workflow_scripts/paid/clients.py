"""The SDK clients more than one paid provider makes (video and image API branches), each
with the SDK's own retries off (the paid request's retry policy decides what is sent again:
`paid.retry`), its httpx client given the pacing hooks, and `timeout_s` (the branch's
`timeout_s` setting) as its read timeout. Each SDK is imported when its client is made: a
job imports only its own."""

from __future__ import annotations


def openai_client(key: str, base_url: str | None, hooks: dict, timeout_s: float):
    """An openai SDK client (the SDK imported now: a job's import only) without retries of its
    own (the caller decides what is sent again), its httpx client given `hooks`."""
    import openai

    return openai.OpenAI(
        api_key=key,
        base_url=base_url,
        max_retries=0,
        timeout=timeout_s,
        http_client=openai.DefaultHttpxClient(event_hooks=hooks),
    )


def ark_client(key: str, base_url: str | None, hooks: dict, timeout_s: float):
    """(a BytePlus Ark runtime client, its httpx client): the SDK imported now (a job's
    import only), without retries of its own, the httpx client given `hooks`."""
    import httpx
    from byteplussdkarkruntime import Ark

    http = httpx.Client(event_hooks=hooks, timeout=timeout_s, follow_redirects=True)
    endpoint = {"base_url": base_url} if base_url else {}
    client = Ark(api_key=key, max_retries=0, timeout=timeout_s, http_client=http, **endpoint)
    return client, http


DASHSCOPE_INTERNATIONAL = (
    "https://dashscope-intl.aliyuncs.com/api/v1"  # Singapore; keys are regional
)
DASHSCOPE_REFUSALS = ("DataInspection", "IPInfringement")  # in an error code: a refusal


def dashscope_refusal(code: str | None) -> bool:
    """Whether Model Studio's error `code` is a refusal (its content inspection, a policy)."""
    return any(word in (code or "") for word in DASHSCOPE_REFUSALS)


def dashscope_client(key: str, base_url: str | None, hooks: dict, timeout_s: float):
    """A dashscope 2.0 client (the SDK imported now: a job's import only) on Model Studio's
    international endpoint unless `base_url`, without retries of its own, its httpx client
    given `hooks`."""
    from dashscope.v2 import Client

    client = Client(
        api_key=key,
        base_url=base_url or DASHSCOPE_INTERNATIONAL,
        timeout=timeout_s,
        max_retries=0,
    )
    client.transport.http_client.event_hooks = hooks
    return client
