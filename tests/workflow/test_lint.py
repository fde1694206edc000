"""The code style and workflow checks the project keeps clean."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.support.workflow import REPO

CHECKS = {
    "ruff": ["ruff", "check", "."],
    "ruff format": ["ruff", "format", "--check", "."],
    "snakefmt": ["snakefmt", "--check", "."],
    "snakemake --lint": [sys.executable, "-m", "snakemake", "--lint"],
}


@pytest.mark.parametrize("name", CHECKS)
def test_clean(name):
    result = subprocess.run(CHECKS[name], cwd=REPO, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    if name == "snakemake --lint":
        assert "good condition" in result.stdout + result.stderr
