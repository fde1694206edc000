"""Shared fixtures: the repository's registry and bundled example benchmark."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.support.workflow import EXAMPLES, REPO
from vgi_models.registry import load_registry


@pytest.fixture(scope="session")
def registry() -> dict:
    """The raw entries of config/models.yaml."""
    return yaml.safe_load((REPO / "config" / "models.yaml").read_text(encoding="utf-8"))


@pytest.fixture(scope="session")
def specs(registry):
    return load_registry(registry)


@pytest.fixture(scope="session")
def example_image() -> Path:
    return EXAMPLES / "maze_square" / "input_image" / "lv1" / "maze_square_lv1_001.png"
