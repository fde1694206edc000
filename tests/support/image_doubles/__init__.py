"""The image API doubles' protocols: one module per provider, each a `Protocol` subclass
named `Protocol`, registered here by the registry's `provider:` value. `FakeImageAPI`
(server.py) serves every one of them on one local server."""

from __future__ import annotations

import importlib

from tests.support.image_doubles.base import Protocol

MODULES = {  # registry `provider:` -> module here
    "gemini_image": "gemini_image",
    "openai_image": "openai_image",
    "qwen_image": "qwen_image",
    "seedream": "seedream",
}


def protocols() -> dict[str, Protocol]:
    """One protocol object per image provider, by its `provider:` value."""
    return {
        name: importlib.import_module(f"{__name__}.{module}").Protocol()
        for name, module in MODULES.items()
    }
