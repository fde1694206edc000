"""The image API providers, by the registry's `provider:` value of an `output: image`
entry: the one place such a provider is registered (its class: `Provider` in the module
named here, an `ImageProvider`), imported only where it is used."""

from __future__ import annotations

from workflow_scripts.common.http import registered
from workflow_scripts.image_api.provider import ImageProvider

PROVIDERS = {  # registry `provider:` -> module of this package
    "gemini_image": "gemini_image",
    "openai_image": "openai_image",
    "qwen_image": "qwen_image",
    "seedream": "seedream",
}


def provider_class(name: str) -> type[ImageProvider]:
    """The provider registered as `name` (its module imported, not its SDK)."""
    return registered("workflow_scripts.image_api", PROVIDERS, name, "Provider")


def open_image_provider(spec, key: str, pace=None, timeout_s: float = 300.0) -> ImageProvider:
    """The client of image API model `spec` (a registry ModelSpec): its SDK imported now."""
    return provider_class(spec.provider)(spec, key, pace, timeout_s)


def setting_problems(key: str, provider: str, model_id: str, generation: dict) -> list[str]:
    """Every setting of image model `key` its provider does not allow (or the provider
    itself, where none is registered under that name), each naming the key."""
    if provider not in PROVIDERS:
        return [
            f"model {key!r}: provider {provider!r} is not an image provider "
            f"({', '.join(PROVIDERS)}; workflow_scripts/image_api/providers.py)"
        ]
    return provider_class(provider).setting_problems(key, provider, model_id, generation)


def nominal_size(provider: str, generation: dict) -> tuple[int, int] | None:
    """(width, height) of an image provider's image asked for (None: the input's size)."""
    return provider_class(provider).nominal_size(generation)
