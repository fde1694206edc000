"""Shared fixtures: the repository's registry and bundled example benchmark, one headless
Chromium and one local SLURM per test process; how the tests spread over xdist's workers."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
import yaml

from tests.support.slurm_cluster import running_cluster
from tests.support.workflow import EXAMPLES, REPO
from vgi_models.registry import load_registry


def pytest_xdist_auto_num_workers(config):
    """`-n auto`: one worker more than the cores. Many tests also wait (on SLURM's polls,
    on the test servers' reply delays); the spare worker keeps every core busy meanwhile."""
    return len(os.sched_getaffinity(0)) + 1


# The modules that take longest, longest first (measured on 2 cores): under xdist
# (`--dist loadscope --no-loadscope-reorder`: a module's tests and its module fixtures on one
# worker, modules handed out in this order) none of them is left alone at the end. Some
# mostly wait (on SLURM's polls, on the test doubles' reply times and retry hints): handed
# out early too, they wait while the whole-study runs keep both cores busy. The
# preference tests copy the reliability tests' study (tests/support/shared.py): handed out
# late, they find it built instead of waiting for it.
LONGEST_FIRST = [
    "tests/workflow/test_workflow.py",
    "tests/workflow/test_sensitivity_run.py",
    "tests/workflow/test_slurm.py",
    "tests/images/test_image_models.py",
    "tests/models/test_resumable.py",
    "tests/bench/test_bench_smoke.py",
    "tests/video_api/test_study.py",
    "tests/study/test_study_workflow.py",
    "tests/video_api/test_providers.py",
    "tests/workflow/test_install.py",
    "tests/video_api/test_unsure_submissions.py",
    "tests/image_api/test_never_pay_twice.py",
    "tests/benchmark/test_published_subset.py",
    "tests/models/test_generate.py",
    "tests/aggregate/test_reliability_workflow.py",
    "tests/judge/test_judge_pacing.py",
    "tests/workflow/test_resume.py",
    "tests/workflow/test_reruns.py",
    "tests/video_api/test_never_twice.py",
    "tests/models/test_image_families.py",
    "tests/images/test_published_images.py",
    "tests/models/test_diffusers_i2v.py",
    "tests/judge/test_judge_client.py",
    "tests/aggregate/test_vs_paper.py",
    "tests/workflow/test_docs_commands.py",
    "tests/models/test_batch.py",
]


def pytest_collection_modifyitems(items):
    """LONGEST_FIRST's modules first, in its order; the rest as collected."""
    rank = {path: n for n, path in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::")[0], len(rank)))


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
    """The running test cluster (tests/support/slurm_cluster.py), for tests/workflow/test_slurm.py
    alone: one SLURM on the machine at a time."""
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


@pytest.fixture(autouse=True)
def blank_page_after(request):
    """After a test that used the browser, a blank page: a page left open (looping videos,
    the status page reloading itself) would take the CPU from every later test."""
    yield
    if "browser" in request.fixturenames:
        request.getfixturevalue("browser").get("about:blank")
