"""`Double`: one provider's REST protocol as `FakeVideoAPI` serves it (the module docstring
of fake_video_api.py says what the server shares)."""

from __future__ import annotations

import re
from abc import ABC, abstractmethod


class Double(ABC):
    """A provider's routes, key, error bodies and answers; `handle` answers one request it
    routes, through the server's shared operations (`fake.submit`, `fake.poll`, ...)."""

    provider: str  # the registry's `provider:` value
    route: re.Pattern  # the paths it answers (fullmatch)
    refusal: str  # the provider's reason for an input it refuses, as the double gives it
    price: float  # the list price, USD per second of video (the paper's Table 10)
    api_key: str  # the server's key (FakeVideoAPI sets it): what a signed token is checked with

    def base_url(self, url: str) -> str:
        """The registry entry's `base_url` that points its SDK at the server at `url`."""
        return url

    @abstractmethod
    def short(self, generation: dict) -> dict:
        """The shipped entry's settings at its shortest clip (tests stay fast)."""

    def key(self, headers) -> str | None:
        """The API key a request carries: its bearer token, as most of the services take it."""
        return headers.get("authorization", "").removeprefix("Bearer ")

    def signed(self, path: str) -> bool:
        """Whether `path` is a download link the service handed out, which its signature
        authorizes instead of the key (none by default)."""
        return False

    @abstractmethod
    def error(self, status: int, message: str, code: str | None = None) -> dict:
        """The provider's error body for an HTTP `status`."""

    @abstractmethod
    def operation_id(self, number: int, model: str) -> str:
        """The id of the server's `number`-th operation, as this provider writes its ids."""

    @abstractmethod
    def handle(self, fake, method: str, match: re.Match, body: bytes, headers):
        """(HTTP status, JSON answer or the video's bytes) for one routed request."""
