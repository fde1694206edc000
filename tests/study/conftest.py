"""The status page's browser: the annotation pages' headless Chromium (Selenium)."""

from tests.annotate.conftest import browser  # noqa: F401 (a fixture, shared)
