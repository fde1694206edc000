"""Writing result files so that a crash never leaves a half-written one."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


# Files get the mode a plain open() would give them (mkstemp's is 0600).
FILE_MODE = 0o666 & ~_umask()


def write_json(path: str | Path, document, indent: int = 2) -> None:
    """Write `document` atomically: a temporary file in the same folder, then a rename."""
    write_text(path, json.dumps(document, indent=indent, ensure_ascii=False) + "\n")


def write_text(path: str | Path, text: str) -> None:
    """Write `text` atomically: a temporary file in the same folder, then a rename."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
        os.chmod(temporary, FILE_MODE)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
