"""State kept outside a job's outputs, which Snakemake deletes when a job fails.

A job that must not lose its work when it is cut off (a resumable denoising, a paid video
API operation) keeps a state file in its own folder, `<outdir>/resume/<run>/<task>/<instance>/`,
named by a digest of everything that decides the job's output (`state_key`), so that a
changed setting never picks up a stale state. Writes are atomic: a temporary file in the
same folder, flushed to disk, then renamed over the state. `write_atomic` is the one writer
of the outdir's files (`workflow_scripts.common.files` writes text and JSON through it).
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO


def state_key(**decides) -> str:
    """A digest of everything that decides the output (settings, prompt, image, versions)."""
    return hashlib.sha256(json.dumps(decides, sort_keys=True).encode()).hexdigest()[:20]


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


# Files get the mode a plain open() would give them (mkstemp's is 0600).
FILE_MODE = 0o666 & ~_umask()


def write_atomic(path: str | Path, write: Callable[[BinaryIO], None]) -> None:
    """`write(handle)` into a temporary file beside `path`, synced, given the mode a plain
    open() would give it (the umask's), then renamed to `path`: a crash never leaves a
    half-written file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as out:
            write(out)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(temporary, FILE_MODE)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


class DiskFullError(OSError):
    """No space left to write a file: says so with the path, never a torch internals error."""

    def __init__(self, path: str | Path, what: str) -> None:
        super().__init__(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
        self.what = what

    def __str__(self) -> str:
        free = ""
        with contextlib.suppress(OSError):
            stat = os.statvfs(Path(self.filename).parent)
            free = f" ({stat.f_bavail * stat.f_frsize / 2**20:.1f} MiB free there)"
        return (
            f"No space left on device to save {self.what} {self.filename}{free}: free space "
            "on that disk, then run the job again (it resumes from its last saved state)."
        )


def _disk_full(error: BaseException | None) -> bool:
    """Whether `error` (or one it arose from) is a full disk: ENOSPC or EDQUOT, or torch's
    zip writer failing mid-file (`inline_container`), as it does on a full disk."""
    seen = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        if isinstance(error, OSError) and error.errno in (errno.ENOSPC, errno.EDQUOT):
            return True
        text = str(error)
        if isinstance(error, RuntimeError) and (
            "inline_container" in text or "No space left" in text
        ):
            return True
        error = error.__cause__ or error.__context__
    return False


@contextlib.contextmanager
def disk_space(path: str | Path, what: str):
    """A write to `path` that fails for a full disk raises `DiskFullError` naming it."""
    try:
        yield
    except (OSError, RuntimeError) as err:
        if isinstance(err, DiskFullError) or not _disk_full(err):
            raise
        raise DiskFullError(path, what) from err


def remove_state(path: str | Path) -> None:
    """The job is done: its state goes, with the empty folders above it."""
    path = Path(path)
    path.unlink(missing_ok=True)
    with contextlib.suppress(OSError):  # up to the first folder still in use
        os.removedirs(path.parent)
