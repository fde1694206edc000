"""Where weights come from: a local path, or a hub id already in the local cache (no downloads)."""

from __future__ import annotations

from pathlib import Path


def resolve(source: str, what: str) -> Path:
    """The local path of `source`; `FileNotFoundError` starting with `what` when it is absent."""
    path = Path(source).expanduser()
    if path.exists():
        return path
    if path.is_absolute() or source.startswith(".") or source.count("/") != 1:
        raise FileNotFoundError(f"{what} {source} not found")
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import LocalEntryNotFoundError

    try:
        return Path(snapshot_download(source, local_files_only=True))
    except LocalEntryNotFoundError:
        raise FileNotFoundError(
            f"{what} {source} is neither a local path nor in the local Hugging Face cache "
            "(download it on a login node first)"
        ) from None
