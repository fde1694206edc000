"""The judge's VLM client: cached, retried, concurrency-capped calls returning checked JSON.

`VLMClient.ask` looks a request up in the cache (a hit makes no call), else calls the
backend (Gemini through google-genai, or any OpenAI-compatible endpoint such as vLLM)
and checks the reply against the request's JSON schema and an optional protocol check.
Every fault (HTTP 408/429/5xx, timeout, dropped connection, no candidate, a blocked or
truncated candidate, invalid JSON, a reply the checks reject) is retried with capped
exponential backoff, or after the server's retry hint (at most 65 s) when it gives one.
The SDKs' own retries are off so that attempts are counted here.

Two kinds of failure: a call whose reply stays unusable (blocked, invalid) after
`max_attempts`, or that the server refuses as a bad request (400), raises JudgeCallError,
which the protocol records as the instance's `error`. A failure of the service raises
ServiceError and fails the job: a refused key (401, 403, 404 at once, never retried), or
a rate limit, server error or dead connection still there after `max_attempts`. The first
ServiceError stops every other call of the client, in flight or waiting, and a client's
first call goes alone, so a refused key costs one call per job.

The cache key hashes everything that determines the answer: backend, model, generation
settings, kind, system prompt, schema, each part's text and image bytes. `base_url` is
left out: it locates a server, not a model (a test server's port changes every run), so
give a self-hosted model a new `model` name when its weights change. The API key is read
from the environment once and appears in no cache file, log record or error message.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import jsonschema
import tenacity

from workflow_scripts.common.files import OutdirFileError, read_json, write_json
from workflow_scripts.common.pacing import SharedRateLimit
from workflow_scripts.judge.backends import (  # noqa: F401 (JudgeCallError: part of the API)
    BACKENDS,
    USAGE_KEYS,
    Fault,
    JudgeCallError,
    ServiceError,
    backend,
    describe_error,
    usage_counts,
)

log = logging.getLogger(__name__)

RETRY_HINT_CAP_S = 65.0
DEFAULTS = {
    "backend": "gemini",
    "model": "gemini-3-flash-preview",
    "base_url": None,
    "api_key_env": "GEMINI_API_KEY",
    "max_concurrency": 16,
    "max_attempts": 5,
    "timeout_s": 180.0,
    "backoff_initial_s": 2.0,
    "backoff_max_s": 60.0,
    "temperature": None,
    "media_resolution": None,
    "thinking_level": None,
    "requests_per_minute": None,
    "tokens_per_minute": None,
    "rate_window_s": 60.0,  # the limits' window (tests scale it down)
}
RATE_FILE = "rate_window"  # the shared limit's file, in the cache folder


@dataclass(frozen=True)
class Part:
    """One piece of a prompt: a text or a JPEG image."""

    text: str | None = None
    image: bytes | None = None

    def __post_init__(self):
        if (self.text is None) == (self.image is None):
            raise ValueError("a Part holds either a text or an image")

    @classmethod
    def of_text(cls, text: str) -> Part:
        return cls(text=text)

    @classmethod
    def of_image(cls, jpeg: bytes) -> Part:
        return cls(image=jpeg)


@dataclass(frozen=True)
class Request:
    """One judge call: `kind` names it (and its cache folder), `schema` its reply;
    `list_key`: a bare JSON array in reply is taken as that field of the object."""

    kind: str
    parts: tuple[Part, ...]
    schema: dict
    system: str | None = None
    list_key: str | None = None


def loads_reply(text: str, list_key: str | None = None):
    """A reply's JSON, read whole: the text itself, else its JSON value with prose or a
    code fence around it (from its first bracket to the last matching one; after a
    leading `[...]` that does not parse, the object's span); a bare array is
    `{list_key: array}` where the request names one. An array inside an object that never
    closes (a reply cut off mid-way) is never taken: such a reply raises Fault, and is
    asked again, as is any reply where nothing parses."""
    stripped = text.strip()
    brace, bracket = stripped.find("{"), stripped.find("[")
    candidates = [stripped]
    if bracket >= 0 and (brace < 0 or bracket < brace):
        candidates.append(stripped[bracket : stripped.rfind("]") + 1])
    if brace >= 0:
        candidates.append(stripped[brace : stripped.rfind("}") + 1])
    for candidate in candidates:
        try:
            data = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(data, list) and list_key:
            return {list_key: data}
        return data
    raise Fault("reply is not valid JSON (or was cut off)")


@dataclass
class Reply:
    """A checked reply; `usage` sums every attempt's tokens (a cache hit: the stored ones);
    `model_version` is the version the server reported, if any."""

    data: dict
    usage: dict
    cached: bool
    attempts: int
    model_version: str | None = None


def _check(data, schema: dict, validate: Callable[[dict], None] | None) -> None:
    # No meta-schema check per call (jsonschema.validate's cost): schemas are code.
    validator = jsonschema.validators.validator_for(schema)(schema)
    error = jsonschema.exceptions.best_match(validator.iter_errors(data))
    if error is not None:
        where = "/".join(map(str, error.absolute_path)) or "reply"
        raise Fault(f"reply does not match the schema at {where}: {error.message}")
    if validate is not None:
        try:
            validate(data)
        except ValueError as error:
            raise Fault(f"reply rejected: {error}") from error


class VLMClient:
    """Asks a VLM for JSON replies (module docstring: cache, retries, faults).

    The SDK client and the concurrency semaphore belong to one event loop; they are
    rebuilt when `ask` runs under a new one (e.g. a second `asyncio.run`). Close the
    client before its loop ends (`async with client:` or `await client.aclose()`) so
    that the SDK's pooled connections close in the loop that opened them.
    """

    def __init__(self, config: dict, key: str, cache_dir: str | Path):
        self.config = {**DEFAULTS, **config}
        if self.config["backend"] not in BACKENDS:
            raise ValueError(f"judge.backend: unknown backend {self.config['backend']!r}")
        self.cache_dir = Path(cache_dir)
        self._key = key
        self._backend_class = backend(self.config["backend"])
        self._settings = {name: self.config[name] for name in self._backend_class.SETTINGS}
        self._loop = self._backend = self._semaphore = None
        self._failure: ServiceError | None = None
        limits = self.config["requests_per_minute"], self.config["tokens_per_minute"]
        self._pace = None
        if any(limits):
            window = self.config["rate_window_s"]
            self._pace = SharedRateLimit(self.cache_dir / RATE_FILE, *limits, window)

    @classmethod
    def from_config(cls, judge_config: dict, cache_dir: str | Path) -> VLMClient:
        """A client for the workflow config's `judge` block; the key comes from the env."""
        name = judge_config.get("api_key_env", DEFAULTS["api_key_env"])
        key = os.environ.get(name, "").strip()
        if not key:
            raise ValueError(
                f"judge.api_key_env: environment variable {name} (the judge's API key) is not set"
            )
        return cls(judge_config, key, cache_dir)

    def cache_path(self, request: Request) -> Path:
        """`cache_dir/<kind>/<sha256 of everything that determines the answer>.json`."""
        identity = {
            "version": 1,
            "backend": self.config["backend"],
            "model": self.config["model"],
            "settings": self._settings,
            "kind": request.kind,
            "system": request.system,
            "schema": request.schema,
            "parts": [
                {"text": part.text}
                if part.image is None
                else {"image": hashlib.sha256(part.image).hexdigest()}
                for part in request.parts
            ],
        }
        blob = json.dumps(identity, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
        digest = hashlib.sha256(blob.encode("utf-8")).hexdigest()
        return self.cache_dir / request.kind / f"{digest}.json"

    async def ask(self, request: Request, validate: Callable[[dict], None] | None = None) -> Reply:
        """The checked reply to `request`, from the cache or the backend."""
        path = self.cache_path(request)
        reply = self._read_cache(path, request, validate)
        if reply is None:
            reply = await self._call(request, validate)
            self._write_cache(path, request, reply)
        tokens = " ".join(f"{key}={reply.usage[key]}" for key in USAGE_KEYS)
        hit = "hit" if reply.cached else "miss"
        log.info(
            "judge %s %s: ok, %d attempt(s), tokens %s, cache %s",
            request.kind,
            path.stem[:12],
            reply.attempts,
            tokens,
            hit,
        )
        return reply

    async def aclose(self) -> None:
        """Closes the SDK client's connections."""
        if self._backend is not None:
            await self._backend.aclose()
        self._loop = self._backend = self._semaphore = None

    async def __aenter__(self) -> VLMClient:
        return self

    async def __aexit__(self, *exc) -> None:
        await self.aclose()

    def _bind(self):
        loop = asyncio.get_running_loop()
        if self._loop is not loop:
            self._loop = loop
            self._semaphore = asyncio.Semaphore(self.config["max_concurrency"])
            pace = self._pace and self._pace.acquire  # when the request is sent (backends)
            self._backend = self._backend_class(self.config, self._key, pace)
            self._first_call, self._answered = asyncio.Lock(), False
            self._failed = asyncio.Event()
        return self._semaphore, self._backend

    async def _send(self, request: Request) -> tuple[str, dict, str | None]:
        """The backend's reply; until one call has succeeded, calls go one at a time."""
        try:
            if not self._answered:
                async with self._first_call:
                    if not self._answered:
                        reply = await self._generate(request)
                        self._answered = True
                        return reply
            return await self._generate(request)
        except ServiceError as error:
            raise self._service_failed(self._redact(error.reason)) from None

    async def _generate(self, request: Request) -> tuple[str, dict, str | None]:
        semaphore, backend = self._bind()
        async with semaphore:
            if self._failure is not None:  # failed while this call waited
                raise self._failure
            if self._pace is None:
                return await backend.generate(request)
            try:
                reply = await backend.generate(request)
            except Fault as fault:
                self._pace.spend((fault.usage or {}).get("total", 0))
                raise
            self._pace.spend(reply[1]["total"])
            return reply

    async def _unless_service_fails(self, call):
        """Await `call`, unless a ServiceError of any call of this client comes first."""
        if self._failure is not None:
            call.close()
            raise self._failure
        task, failed = asyncio.ensure_future(call), asyncio.ensure_future(self._failed.wait())
        try:
            await asyncio.wait({task, failed}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            failed.cancel()
            if not task.done():
                task.cancel()
        if task.done() and not task.cancelled():
            return task.result()
        raise self._failure

    def _service_failed(self, reason: str) -> ServiceError:
        """Record the client's first service failure; every other call stops on it."""
        if self._failure is None:
            self._failure = ServiceError(reason)
            self._failed.set()
            log.error("judge: service failure: %s", reason)
        return self._failure

    async def _call(self, request: Request, validate) -> Reply:
        self._bind()
        usage, attempts, version = usage_counts(), 0, None

        async def attempt() -> dict:
            nonlocal attempts, version
            attempts += 1
            try:
                text, spent, version = await self._send(request)
                for key in USAGE_KEYS:
                    usage[key] += spent[key]
                data = loads_reply(text, request.list_key)
                _check(data, request.schema, validate)
                return data
            except Fault as fault:
                for key in USAGE_KEYS:
                    usage[key] += (fault.usage or {}).get(key, 0)
                raise

        retrying = tenacity.AsyncRetrying(
            stop=tenacity.stop_after_attempt(self.config["max_attempts"]),
            wait=self._wait,
            retry=tenacity.retry_if_exception_type(Fault),
            before_sleep=lambda state: self._log_retry(request.kind, state),
            reraise=True,
        )
        try:
            data = await self._unless_service_fails(retrying(attempt))
        except ServiceError:
            raise
        except (Fault, JudgeCallError) as error:
            reason = self._redact(f"{error} (after {attempts} attempt(s))")
            if getattr(error, "service", False):
                raise self._service_failed(reason) from None
            log.warning("judge %s: failed: %s", request.kind, reason)
            raise JudgeCallError(reason, attempts, dict(usage)) from None
        return Reply(data, usage, cached=False, attempts=attempts, model_version=version)

    def _wait(self, state: tenacity.RetryCallState) -> float:
        hint = state.outcome.exception().retry_after
        if hint is not None:
            return min(hint, RETRY_HINT_CAP_S)
        backoff = tenacity.wait_exponential_jitter(
            initial=self.config["backoff_initial_s"],
            max=self.config["backoff_max_s"],
            jitter=self.config["backoff_initial_s"],
        )
        return backoff(state)

    def _log_retry(self, kind: str, state: tenacity.RetryCallState) -> None:
        reason = self._redact(str(state.outcome.exception()))
        log.info(
            "judge %s: attempt %d failed (%s); retrying in %.2f s",
            kind,
            state.attempt_number,
            reason,
            state.next_action.sleep,
        )

    def _redact(self, text: str) -> str:
        return text.replace(self._key, "***")

    def _read_cache(self, path: Path, request: Request, validate) -> Reply | None:
        try:  # an entry that does not read back is a miss: asked again, written again
            record = read_json(path, "none (asked again)", ["data", "usage"], optional=True)
            if record is None:
                return None
            _check(record["data"], request.schema, validate)
        except (ValueError, KeyError, TypeError, Fault) as error:  # OutdirFileError included
            why = error.problem if isinstance(error, OutdirFileError) else error
            log.warning("judge %s: ignoring cache entry %s (%s)", request.kind, path, why)
            return None
        version = record.get("model_version")
        return Reply(record["data"], record["usage"], True, 0, model_version=version)

    def _write_cache(self, path: Path, request: Request, reply: Reply) -> None:
        """Writes the reply atomically: a temporary file in the same folder, then a rename."""
        record = {
            "backend": self.config["backend"],
            "model": self.config["model"],
            "kind": request.kind,
            "data": reply.data,
            "usage": reply.usage,
            "attempts": reply.attempts,
            "model_version": reply.model_version,
            "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        }
        write_json(path, record, indent=1)
