"""The registry's real weights: well-formed sources, and README commands that fetch them."""

from __future__ import annotations

import re

from tests.support.workflow import REPO

# huggingface_hub's repo-id rule: owner/name, letters, digits, "-", "_", "."; no "--" or ".."
HUB_ID = re.compile(r"^(?!.*(--|\.\.))[A-Za-z0-9][\w.-]{0,95}/[A-Za-z0-9][\w.-]{0,95}(?<![.-])$")
LOCAL = ("/", "./", "../", "~")
DOWNLOAD = re.compile(r"huggingface-cli download\s+([^\s`]+)")


def _weights(registry: dict) -> dict[str, str]:
    """Every non-tiny weight location (base weights, LoRA) by where it is named."""
    found = {}
    for key, entry in registry.items():
        if entry["source"] not in ("tiny", "api", "videos", "static", "images"):  # no weights
            found[f"{key}.source"] = entry["source"]
        if entry.get("lora") and entry["lora"]["path"] != "tiny":
            found[f"{key}.lora.path"] = entry["lora"]["path"]
    return found


def test_every_real_source_is_a_local_path_or_a_hub_id(registry):
    weights = _weights(registry)
    assert len(weights) >= 7
    bad = {where: s for where, s in weights.items() if not (s.startswith(LOCAL) or HUB_ID.match(s))}
    assert bad == {}
    assert registry["hunyuan15_i2v"]["source"] == (
        "hunyuanvideo-community/HunyuanVideo-1.5-Diffusers-720p_i2v"
    )


def test_hub_id_rule_rejects_malformed_ids():
    for bad in ("HunyuanVideo-1.5", "a/b/c", "owner/name.", "owner/na--me", "/x", "owner/ name"):
        assert not HUB_ID.match(bad), bad
    assert HUB_ID.match("Wan-AI/Wan2.2-I2V-A14B-Diffusers")


def test_documented_download_commands_name_the_registry_ids(registry):
    readme = (REPO / "docs" / "models.md").read_text(encoding="utf-8")
    commands = set(DOWNLOAD.findall(readme)) - {"hexuan21/VGI-Bench"}
    hub_ids = {s for s in _weights(registry).values() if not s.startswith(LOCAL)}
    assert commands == hub_ids


def test_vbvr_comes_as_lora_or_as_full_pipeline_with_the_same_settings(registry):
    for version in ("2.2", "2.1"):
        key = f"vbvr_wan{version.replace('.', '')}"
        lora, full = registry[key], registry[f"{key}_pipeline"]
        assert full["source"] == f"Video-Reason/VBVR-Wan{version}" and "lora" not in full
        assert lora["lora"]["path"] == f"{full['source']}-diffsynth"
        assert full["generation"] == lora["generation"] and full["family"] == lora["family"]
