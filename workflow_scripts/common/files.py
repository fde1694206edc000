"""The outdir's files: written atomically, read back guarded.

Writes go through `vgi_models.state.write_atomic` (a temporary file, synced, the umask's
mode, renamed), so a crash never leaves a half-written file. Every file the workflow reads
back from its outdir goes through `read_json` or `read_csv`: an empty, truncated or foreign
file (a full disk, a hand edit, another program) raises `OutdirFileError`, whose message
names the file, what is wrong with it and the fix (`fix`: the rule that writes it again, or
the file to delete). A job reports it through `common.logs.job_log`, a parse or a hook as
a `WorkflowError`: never a traceback. A cache that does not read is a miss instead
(`read_json` raises, the cache's owner warns and writes it again).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from vgi_models.state import write_atomic


class OutdirFileError(ValueError):
    """A file of the outdir does not read back as what the workflow wrote: `path`, what is
    wrong (`problem`) and what to do (`fix`)."""

    def __init__(self, path: str | Path, problem: str, fix: str) -> None:
        self.path, self.problem, self.fix = Path(path), problem, fix
        super().__init__(f"{path} {problem}. To fix it: {fix}.")


def write_json(path: str | Path, document, indent: int = 2) -> None:
    """Write `document` atomically (see the module)."""
    write_text(path, json.dumps(document, indent=indent, ensure_ascii=False) + "\n")


def write_text(path: str | Path, text: str) -> None:
    """Write `text` atomically (see the module)."""
    write_atomic(path, lambda out: out.write(text.encode("utf-8")))


def write_image(path: str | Path, image, **options) -> None:
    """Save PIL `image` atomically (see the module), in the format of `path`'s suffix."""
    from PIL import Image

    kind = Image.registered_extensions()[Path(path).suffix.lower()]
    write_atomic(path, lambda out: image.save(out, format=kind, **options))


def _text(path: Path, fix: str) -> str:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise OutdirFileError(path, "does not exist", fix) from None
    except UnicodeDecodeError:
        raise OutdirFileError(path, "is not UTF-8 text (written by something else?)", fix) from None
    except OSError as error:
        raise OutdirFileError(path, f"cannot be read ({error.strerror})", fix) from None
    if not text.strip():
        raise OutdirFileError(path, "is empty", fix)
    return text


def read_json(path: str | Path, fix: str, keys: Iterable[str] = (), optional: bool = False):
    """The JSON object in `path`, which must hold `keys`; None for a missing file when
    `optional`. Raises `OutdirFileError` (naming `fix`) for anything else."""
    path = Path(path)
    if optional and not path.exists():
        return None
    text = _text(path, fix)
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        raise OutdirFileError(path, f"is not complete JSON (truncated? {error})", fix) from None
    if not isinstance(document, dict):
        raise OutdirFileError(
            path, f"holds a JSON {type(document).__name__}, not this workflow's object", fix
        )
    if missing := [key for key in keys if key not in document]:
        raise OutdirFileError(
            path, f"lacks {', '.join(missing)} (not a file this workflow wrote)", fix
        )
    return document


def read_csv(path: str | Path, fix: str, columns: Iterable[str] = (), **options):
    """The table in `path` (`options` go to `pandas.read_csv`), which must have `columns`.
    Raises `OutdirFileError` (naming `fix`) for a missing, empty or foreign file."""
    import pandas as pd  # not for the jobs that read only JSON

    path = Path(path)
    _text(path, fix)
    try:
        table = pd.read_csv(path, **options)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, ValueError) as error:
        first = str(error).strip().splitlines()[0]
        raise OutdirFileError(path, f"is not a readable table ({first})", fix) from None
    if missing := [column for column in columns if column not in table.columns]:
        raise OutdirFileError(
            path,
            f"has the columns {', '.join(map(str, table.columns))}, without "
            f"{', '.join(missing)} (not the table this workflow wrote)",
            fix,
        )
    return table
