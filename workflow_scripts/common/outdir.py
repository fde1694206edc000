"""The outdir before any job: where it may be (`outdir_problems`, gathered with the config's
other problems) and who writes it (`OutdirLock`, held from the start of a run to its end).

Snakemake's own lock lives in each working directory (`.snakemake/locks`), so two checkouts
writing one outdir would both regenerate every video; the outdir's own lock (an flock on
`<outdir>/.vgi-run.lock`, through the `filelock` package) refuses the second working
directory by naming the first. The kernel drops an flock when its process ends, so a run
that was killed leaves no lock behind; `<outdir>/.vgi-run.holder` says who holds it.
"""

from __future__ import annotations

import json
import os
import socket
import tempfile
import time
from pathlib import Path

from filelock import FileLock, Timeout

LOCK = ".vgi-run.lock"
HOLDER = ".vgi-run.holder"


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def outdir_problems(outdir: str | Path, benchmark_root: str | Path) -> list[str]:
    """Why `outdir` cannot hold this study's outputs: inside the benchmark root (outputs
    would be written into the dataset, then read as tasks), a file, or not writable."""
    given, out = str(outdir), Path(outdir).resolve()
    root = Path(benchmark_root).resolve()
    if _inside(out, root):
        where = "is the benchmark root" if out == root else "is inside the benchmark root"
        return [
            f"outdir: {given} {where} ({root}): the outputs would be written into the "
            "dataset and read as tasks by the next run; set outdir to a folder outside it "
            "(e.g. --config outdir=results)"
        ]
    existing = out
    while not existing.exists() and not existing.is_symlink():
        existing = existing.parent
    if not existing.is_dir():
        what = "is a file" if existing == out else f"has a file in its path ({existing})"
        return [
            f"outdir: {given} {what}, not a folder: move the file away, or set outdir to "
            "another path (--config outdir=...)"
        ]
    try:
        with tempfile.TemporaryFile(dir=existing, prefix=".vgi-write-check."):
            pass
    except OSError as err:
        where = "" if existing == out else f" (its nearest existing folder {existing})"
        return [
            f"outdir: {given} is not writable{where}: {err.strerror or err}; make it "
            "writable, or set outdir to a folder you can write (--config outdir=...)"
        ]
    return []


class OutdirLockError(RuntimeError):
    """The outdir is held by a run in another working directory."""


class OutdirLock:
    """The outdir's lock for this working directory's run: `acquire` at its start (raises
    `OutdirLockError` naming the holder), `release` at its end."""

    def __init__(self, outdir: str | Path) -> None:
        self.outdir = Path(outdir)
        self.path = self.outdir / LOCK
        self.holder = self.outdir / HOLDER
        self.lock: FileLock | None = None

    def acquire(self) -> bool:
        """Hold the lock; False (nothing held) when a run in this same working directory
        holds it (Snakemake's own lock keeps the two apart)."""
        self.outdir.mkdir(parents=True, exist_ok=True)
        lock = FileLock(self.path, timeout=0, thread_local=False)
        try:
            lock.acquire()
        except Timeout:
            holder = self._holder()
            if holder.get("workdir") == os.getcwd() and holder.get("host") == socket.gethostname():
                return False
            raise OutdirLockError(self._refusal(holder)) from None
        self.lock = lock
        me = {
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "workdir": os.getcwd(),
            "since": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        }
        self.holder.write_text(json.dumps(me) + "\n", encoding="utf-8")
        return True

    def release(self) -> None:
        if self.lock is None:
            return
        self.holder.unlink(missing_ok=True)
        self.lock.release()
        self.lock = None

    def _holder(self) -> dict:
        try:
            holder = json.loads(self.holder.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return holder if isinstance(holder, dict) else {}

    def _refusal(self, holder: dict) -> str:
        if holder:
            who = (
                f"a run in working directory {holder.get('workdir')} (host "
                f"{holder.get('host')}, pid {holder.get('pid')}, since {holder.get('since')})"
            )
        else:
            who = "another run (its holder file is missing)"
        return (
            f"outdir {self.outdir} is in use by {who}: two working directories writing one "
            "outdir would both make every output. Wait for that run to end, or run from its "
            "working directory. The lock goes when its process ends; if that process is "
            f"gone and the lock stays (a network file system), remove {self.path} and "
            f"{self.holder} and run again."
        )
