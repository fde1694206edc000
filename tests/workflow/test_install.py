"""The README's install on a later day: a new venv, the pip Python ships, an index that
serves a newer release of every locked package. What pip would install is the lock, exactly.

The README's own install command is read and run (resolve only: `--dry-run --report`; CI's
`.ci/run` installs the same command for real) with one more `--find-links` folder of tiny
empty wheels, each a locked package at a version far above the lock's. A lock installed with
resolving can take such a release wherever it leaves a requirement unpinned (an extra the
lock strips, a new dependency of a newer pip's reading): that is how a fresh machine broke
the day after google-auth 2.63.1 came out.
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from packaging.utils import canonicalize_name
from packaging.version import Version

from tests.support.workflow import REPO

LOCKS = sorted((REPO / "requirements").glob("*.txt"))
LOCKED = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+)", re.MULTILINE)
# Every install of a lock in the project's own words: `pip install [options] -r requirements/X.txt`.
LOCK_INSTALL = re.compile(r"pip install (?:(?!&&)[^\n`])*?-r requirements/\w+\.txt[^\n`&]*")
WHERE = [REPO / "README.md", REPO / ".ci" / "run", *sorted((REPO / "docs").glob("*.md"))]


def locked(lock: Path) -> dict[str, Version]:
    text = lock.read_text(encoding="utf-8")
    return {canonicalize_name(name): Version(version) for name, version in LOCKED.findall(text)}


def quick_start_install() -> list[str]:
    """The README's first quick-start command, up to and including its install of the lock."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    block = re.search(r"## Quick start.*?```bash\n(.*?)```", readme, re.DOTALL).group(1)
    steps = [shlex.split(step) for step in block.strip().split(" && ")]
    return next(step for step in steps if step[:2] == ["pip", "install"] and "-r" in step)


def newer_wheel(folder: Path, name: str, version: Version) -> None:
    """An empty wheel of `name` at a version far above `version`, as an index might serve
    on a later day."""
    newer = f"{version.major + 1000}.0"
    stem = f"{name.replace('-', '_')}-{newer}"
    info = f"{stem}.dist-info"
    files = {
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {newer}\n",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
        "Tag: py3-none-any\n",
    }
    files[f"{info}/RECORD"] = "".join(f"{path},,\n" for path in [*files, f"{info}/RECORD"])
    with zipfile.ZipFile(folder / f"{stem}-py3-none-any.whl", "w") as wheel:
        for path, text in files.items():
            wheel.writestr(path, text)


@pytest.mark.parametrize("place", WHERE, ids=lambda path: path.name)
def test_every_install_of_a_lock_resolves_nothing_and_checks(place):
    """`--no-deps`: the lock holds every package, so nothing is left to an index's later
    releases; `pip check` after it proves the set consistent."""
    text = place.read_text(encoding="utf-8").replace("\\\n", " ")
    for command in LOCK_INSTALL.findall(text):
        assert "--no-deps" in command.split(), f"{place.name}: {command}"
        rest = text[text.index(command) + len(command) :]
        assert re.match(r"\s*&&\s*pip check\b", rest), f"{place.name}: no pip check after {command}"


def test_the_readme_install_takes_the_lock_from_a_newer_index(tmp_path):
    lock = REPO / "requirements" / "cpu.txt"
    versions = locked(lock)
    newer = tmp_path / "newer"
    newer.mkdir()
    for name, version in versions.items():
        newer_wheel(newer, name, version)
    subprocess.run([sys.executable, "-m", "venv", tmp_path / "venv"], check=True)
    pip = [str(tmp_path / "venv" / "bin" / "python"), "-m", "pip"]
    shipped = subprocess.run([*pip, "--version"], capture_output=True, text=True, check=True)
    install = quick_start_install()
    report = tmp_path / "report.json"
    done = subprocess.run(
        [*pip, *install[1:], "--dry-run", "--quiet", "--report", report,
         "--find-links", newer, "--disable-pip-version-check"],  # fmt: skip
        cwd=REPO, capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 0, f"{shlex.join(install)} with {shipped.stdout}{done.stderr}"
    taken = {
        canonicalize_name(item["metadata"]["name"]): Version(item["metadata"]["version"])
        for item in json.loads(report.read_text(encoding="utf-8"))["install"]
    }
    print(f"{shipped.stdout.strip()}: {len(versions)} packages offered newer,"
          f" {sum(taken[n] != v for n, v in versions.items() if n in taken)} taken")  # fmt: skip
    assert taken == versions
