"""Shared fixtures: the repository's registry and bundled example benchmark, one headless
Chromium and one local SLURM per test process; how the tests spread over xdist's workers."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from tests.support.slurm_cluster import running_cluster
from tests.support.workflow import EXAMPLES, REPO
from vgi_models.registry import load_registry


def pytest_collection_modifyitems(items):
    """Under `--dist loadgroup`, a module's tests share one worker, so a module-scoped
    fixture (a tiny study run) runs once; modules marked `xdist_group("slurm")` share one
    worker, so one SLURM runs on the machine at a time."""
    for item in items:
        if not item.get_closest_marker("xdist_group"):
            item.add_marker(pytest.mark.xdist_group(item.module.__name__))


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


@pytest.fixture(scope="session")
def slurm_cluster():
    """The running test cluster (tests/support/slurm_cluster.py); its modules are marked
    `xdist_group("slurm")`."""
    with running_cluster() as cluster:
        yield cluster


@pytest.fixture(scope="session")
def browser():
    """Headless Chromium through Selenium (Debian's chromedriver), for the annotation pages,
    the gallery and the status page."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    driver_path = shutil.which("chromedriver")
    assert chromium and driver_path, "apt-get install -y chromium chromium-driver"
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1400,1100"):
        options.add_argument(flag)
    options.add_argument("--autoplay-policy=no-user-gesture-required")
    driver = webdriver.Chrome(options=options, service=Service(driver_path))
    yield driver
    driver.quit()
