"""Studies built once per test session and read by several modules, whichever xdist worker
asks first building it while the others wait on its lock (pytest-xdist's documented way to
run a session fixture once). A shared study's outdir is relative (`results`), so that a copy
of its folder, `.snakemake/` included, is the same finished run: a test that writes works on
its own copy (`copy_of`), never on the shared folder."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

from filelock import FileLock


def shared_folder(tmp_path_factory, name: str, build: Callable[[Path], None]) -> Path:
    """The folder `name` of this session, made by `build(folder)` the first time it is asked
    for. A build that fails leaves no folder: the next to ask builds (and fails) again."""
    base = tmp_path_factory.getbasetemp()
    root = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base  # the session's
    folder = root / "shared" / name
    with FileLock(str(root / f"shared-{name}.lock")):
        if not (folder / ".built").exists():
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir(parents=True)
            try:
                build(folder)
            except BaseException:
                shutil.rmtree(folder, ignore_errors=True)
                raise
            (folder / ".built").touch()
    return folder


def copy_of(folder: Path, to: Path) -> Path:
    """A copy of a shared study's folder at `to` (times kept: Snakemake sees a finished run)."""
    shutil.copytree(folder, to, symlinks=True)
    return to
