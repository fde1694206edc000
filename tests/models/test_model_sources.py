"""The registry's real weights: well-formed sources, and the docs' commands that fetch them
(each read by the installed `hf` command as written)."""

from __future__ import annotations

import re
import shlex
import warnings
from importlib import metadata

import huggingface_hub.cli.download as hf_download
import pytest
from huggingface_hub.cli.hf import app as hf

from tests.support.workflow import REPO

# huggingface_hub's repo-id rule: owner/name, letters, digits, "-", "_", "."; no "--" or ".."
HUB_ID = re.compile(r"^(?!.*(--|\.\.))[A-Za-z0-9][\w.-]{0,95}/[A-Za-z0-9][\w.-]{0,95}(?<![.-])$")
LOCAL = ("/", "./", "../", "~")
DOWNLOAD = re.compile(r"(?<![\w-])hf download\s+([^\s`]+)")
COMMAND = re.compile(r"(?<![\w-])hf download [^`\n]+")
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def download_commands() -> list[list[str]]:
    """Every `hf download ...` of README.md and docs/ (lines continued with a backslash
    joined; a `# comment` left out), split as a shell splits it."""
    texts = (path.read_text(encoding="utf-8").replace("\\\n", " ") for path in DOCS)
    return [shlex.split(found, comments=True) for text in texts for found in COMMAND.findall(text)]


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


def test_hf_is_a_command_of_the_installed_huggingface_hub():
    scripts = metadata.distribution("huggingface_hub").entry_points.select(group="console_scripts")
    assert "hf" in scripts.names and "huggingface-cli" not in scripts.names


@pytest.mark.parametrize("command", download_commands(), ids=lambda c: " ".join(c[2:]))
def test_documented_downloads_run_as_written(monkeypatch, command):
    """hf reads the command as meant: one repository, every `--include`'s pattern (a second
    pattern after one flag would be a file name, and the patterns ignored)."""
    asked = []
    for name in ("snapshot_download", "hf_hub_download"):  # a single file: hf_hub_download
        monkeypatch.setattr(hf_download, name, lambda **kw: asked.append(kw) or "x")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        hf(command[1:], standalone_mode=False)
    patterns = [command[i + 1] for i, word in enumerate(command) if word == "--include"]
    assert asked[0]["repo_id"] == command[2] and "filename" not in asked[0]
    assert (asked[0]["allow_patterns"] or []) == patterns


def test_every_documented_download_is_found():
    commands = download_commands()
    assert len(commands) >= 16 and all(command[:2] == ["hf", "download"] for command in commands)
