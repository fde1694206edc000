"""The video API doubles' protocols: one module per provider, each a `Double` subclass named
`Double`, registered here by the registry key of its shipped entry. `FakeVideoAPI`
(tests/support/fake_video_api.py) serves every one of them on one local server."""

from __future__ import annotations

import importlib

from tests.support.video_doubles.base import Double

MODULES = {  # shipped registry key -> module here
    "veo31": "veo",
    "sora2": "sora",
    "gen45": "runway",
    "seedance2": "seedance",
    "kling3": "kling",
    "wan27": "wan27",
}


def doubles() -> dict[str, Double]:
    """One protocol object per shipped API entry, by its registry key."""
    return {
        key: importlib.import_module(f"{__name__}.{module}").Double()
        for key, module in MODULES.items()
    }
