"""The video API providers, by the registry's `provider:` value: the one place a provider
is registered (its class: `Provider` in the module named here, a `VideoProvider`).

The rest of the workflow asks through these look-ups, by the registry entry's provider
name and settings, and never branches on a provider's name.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from workflow_scripts.common.http import registered
from workflow_scripts.video_api.provider import TIMEOUT_S, VideoProvider

if TYPE_CHECKING:  # pandas only for the hints: the jobs never load it
    import pandas as pd

PROVIDERS = {  # registry `provider:` -> module of this package
    "veo": "veo",
    "sora": "sora",
    "runway": "runway",
    "seedance": "seedance",
    "kling": "kling",
    "wan27": "wan27",
}


def provider_class(name: str) -> type[VideoProvider]:
    """The provider registered as `name` (its module imported, not its SDK)."""
    return registered("workflow_scripts.video_api", PROVIDERS, name, "Provider")


def open_provider(spec, key: str, pace=None, timeout_s: float = TIMEOUT_S) -> VideoProvider:
    """The client of API model `spec` (a registry ModelSpec): its SDK imported now, each
    request's answer waited for `timeout_s` (video_api.timeout_s)."""
    return provider_class(spec.provider)(spec, key, pace, timeout_s)


def setting_problems(key: str, provider: str, model_id: str, generation: dict) -> list[str]:
    """Every setting of model `key` its provider does not allow (or the provider itself,
    where none is registered under that name), each naming the key."""
    if provider not in PROVIDERS:
        return [
            f"model {key!r}: provider {provider!r} is not one of {', '.join(PROVIDERS)} "
            "(workflow_scripts/video_api/providers.py)"
        ]
    return provider_class(provider).setting_problems(key, provider, model_id, generation)


def image_problems(key: str, provider: str, generation: dict, sizes: pd.Series) -> list[str]:
    """Each instance (index of `sizes`: (width, height) of its input image) whose image
    does not fit the aspect model `key`'s settings ask for."""
    return provider_class(provider).image_problems(key, generation, sizes)


def seconds_of(provider: str, generation: dict) -> int:
    """The seconds of video one submission asks for (what it is billed by)."""
    return provider_class(provider).seconds(generation)


def resolution_of(provider: str, generation: dict) -> str:
    """The resolution or size one submission asks for (a price table's sub-key)."""
    return provider_class(provider).resolution(generation)


def nominal_clip(provider: str, generation: dict) -> dict:
    """frames, fps, width and height of a video asked for (the plan's estimate)."""
    return provider_class(provider).nominal_clip(generation)
