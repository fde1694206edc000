"""A full decode of every benchmark image, remembered across runs in a cache file.

Reading only an image's header lets a truncated file through to a GPU job; decoding
every pixel of 810 release-size PNGs takes seconds (bench/image_check.py), too long to
repeat at every parse. A decoded image's size is remembered by its absolute path, byte
size and modification time, with whether a model would see it as the file shows it
(`vgi_models.input_image.refusal`); a failure is never remembered, so it is reported every
time.
`warm` decodes many images on threads (Pillow's decoders release the GIL).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from PIL import Image

from vgi_models.input_image import refusal
from workflow_scripts.common.files import OutdirFileError, read_json, write_text

log = logging.getLogger(__name__)


class ImageCheck:
    """`size(path)` of fully decoded images; a context whose exit saves the cache file."""

    def __init__(self, cache: str | Path | None = None) -> None:
        self.cache = Path(cache) if cache else None
        self.known: dict[str, list[int]] = {}
        self.changed = False
        if self.cache and self.cache.is_file():
            try:
                self.known = read_json(self.cache, "none (a cache)")
            except OutdirFileError as error:  # a damaged cache only costs a full check
                log.warning("%s %s: every image is checked again, the cache written again",
                            error.path, error.problem)  # fmt: skip

    def _stamp(self, path: str | Path) -> tuple[str, list[int]]:
        stat = os.stat(path)
        return os.path.abspath(path), [stat.st_size, stat.st_mtime_ns]

    def _known(self, key: str, stamp: list[int]) -> bool:
        entry = self.known.get(key)
        return bool(entry) and len(entry) == 5 and entry[:2] == stamp

    def _unknown(self, path: str | Path) -> bool:
        try:
            return not self._known(*self._stamp(path))
        except OSError:
            return False  # missing: `size` reports it

    def size(self, path: str | Path) -> tuple[int, int]:
        """(width, height) after decoding every pixel; raises `OSError` (or
        `Image.DecompressionBombError`) for a file that does not decode."""
        entry = self._entry(path)
        return entry[2], entry[3]

    def refused(self, path: str | Path) -> str | None:
        """Why a model would not see the decoded image as the file shows it (16 bits and
        transparency are converted, `vgi_models.input_image`), or None; raises as `size`."""
        return self._entry(path)[4] or None

    def _entry(self, path: str | Path) -> list:
        key, stamp = self._stamp(path)
        if not self._known(key, stamp):
            with Image.open(path) as image:
                image.load()
                entry = [*stamp, *image.size, refusal(image) or ""]
                self.known[key], self.changed = entry, True
        return self.known[key]

    def warm(self, paths: Iterable[str | Path]) -> None:
        """Decode the unknown of `paths` on threads, so that `size` finds them known; a
        file that does not decode is left for `size` to report."""

        def attempt(path):
            with contextlib.suppress(OSError, SyntaxError, Image.DecompressionBombError):
                self.size(path)

        paths = [path for path in paths if self._unknown(path)]
        if paths:
            with ThreadPoolExecutor(min(8, os.cpu_count() or 1)) as pool:
                list(pool.map(attempt, paths))

    def __enter__(self) -> ImageCheck:
        return self

    def __exit__(self, *exc) -> None:
        if not (self.cache and self.changed):
            return
        write_text(self.cache, json.dumps(self.known))  # concurrent parses: the last one wins
