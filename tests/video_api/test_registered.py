"""A provider registered in `video_api.providers.PROVIDERS` is all the workflow needs: its
shipped registry entry passes the schema and the settings checks, the plan's nominal clip
and the price table agree with it, and nothing else names a provider."""

from __future__ import annotations

import inspect
import subprocess
import sys

import pytest
import yaml

from tests.support.workflow import REPO
from workflow_scripts.common.config import check
from workflow_scripts.video_api.provider import VideoProvider
from workflow_scripts.video_api.providers import (
    PROVIDERS,
    nominal_clip,
    provider_class,
    resolution_of,
    seconds_of,
    setting_problems,
)

SCHEMA = REPO / "config" / "schemas" / "models.schema.yaml"
REGISTRY = yaml.safe_load((REPO / "config" / "models.yaml").read_text(encoding="utf-8"))
API = {  # the video API entries (an image API's: tests/image_api)
    key: entry
    for key, entry in REGISTRY.items()
    if entry["source"] == "api" and entry.get("output", "video") == "video"
}
SDK_MODULES = (  # the providers' SDKs and what only they import: a job's imports only
    "openai",
    "google.genai",
    "httpx2",
    "tenacity",
    "byteplussdkarkruntime",
    "runwayml",
    "httpx",
    "jwt",
    "dashscope",
)
PRICES = yaml.safe_load((REPO / "config" / "config.yaml").read_text())["prices"]["video_seconds"]


def test_every_registered_provider_has_a_shipped_entry_and_every_entry_a_provider():
    assert {entry["provider"] for entry in API.values()} == set(PROVIDERS)


@pytest.mark.parametrize("key", sorted(API))
def test_a_shipped_entry_agrees_with_its_provider(key):
    entry = API[key]
    name, model_id, generation = entry["provider"], entry["model_id"], entry["generation"]
    provider = provider_class(name)
    assert issubclass(provider, VideoProvider) and not inspect.isabstract(provider)
    assert provider.SIZE_SETTING in provider.SETTINGS and provider.FPS > 0
    check({key: dict(entry)}, SCHEMA, "registry")  # the schema takes it as it is
    assert setting_problems(key, name, model_id, generation) == []
    clip, seconds = nominal_clip(name, generation), seconds_of(name, generation)
    assert clip["fps"] == provider.FPS and clip["frames"] == seconds * provider.FPS
    assert (clip["width"], clip["height"]) == provider.frame_size(generation)
    price = PRICES[model_id]  # config/config.yaml prices it: one price, or by resolution
    assert not isinstance(price, dict) or resolution_of(name, generation) in price


def test_the_schema_keeps_no_list_of_providers_and_an_unknown_one_is_named():
    schema = yaml.safe_load(SCHEMA.read_text(encoding="utf-8"))
    assert "enum" not in schema["$defs"]["model"]["properties"]["provider"]
    entry = API["veo31"] | {"provider": "pika"}
    check({"pika22": dict(entry)}, SCHEMA, "registry")
    (problem,) = setting_problems("pika22", "pika", entry["model_id"], entry["generation"])
    assert problem.startswith("model 'pika22': provider 'pika' is not one of ")
    assert all(name in problem for name in PROVIDERS) and "video_api/providers.py" in problem


def test_the_workflow_reads_every_provider_without_importing_an_sdk():
    """The settings checks run at every command: a provider's SDK is a job's import only."""
    code = (
        "import sys\n"
        "from workflow_scripts.video_api.providers import PROVIDERS, provider_class\n"
        "for name in PROVIDERS: provider_class(name)\n"
        f"print(sorted(set({SDK_MODULES!r}) & set(sys.modules)))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
