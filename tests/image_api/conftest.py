"""What both image API test modules stand on."""

from __future__ import annotations

from pathlib import Path

import pytest
from PIL import Image


@pytest.fixture
def image(tmp_path) -> Path:
    """An instance's input image: 16:9, plain 8-bit RGB, as the release's."""
    path = tmp_path / "maze_lv1_001.png"
    Image.new("RGB", (160, 90), (250, 240, 20)).save(path)
    return path
