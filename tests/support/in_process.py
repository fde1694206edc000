"""A command's Python entry run in the test process as its own process would run it: its
argv and working directory, its streams (at the file descriptors too, so what a child it
starts prints is captured with it), its exit status. Saves a new interpreter's imports for
each run; this process's working directory, environment, argv, import path and torch
threads are put back after."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import tempfile
import traceback
from collections.abc import Callable
from pathlib import Path
from unittest import mock


def run_main(
    main: Callable[[], object],
    argv: list[str],
    cwd: Path | None = None,
    merged: bool = False,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess:
    """`main()` with `sys.argv` = `argv`, in `cwd`, with the environment `env` (default:
    this process's): its exit status (a `SystemExit`'s, 1 on an exception, whose traceback
    goes to stderr) and its output; with `merged` stderr goes into stdout, as with both
    streams on one pipe."""
    with (
        tempfile.TemporaryFile("w+", encoding="utf-8", buffering=1) as out,
        tempfile.TemporaryFile("w+", encoding="utf-8", buffering=1) as err,
    ):
        err = out if merged else err
        with _streams_to(out, err), _state_kept(argv, cwd, env):
            code = _exit_status(main)
        out.seek(0)
        err.seek(0)
        return subprocess.CompletedProcess(argv, code, out.read(), "" if merged else err.read())


def _exit_status(main: Callable[[], object]) -> int:
    try:
        main()
    except SystemExit as exit:
        if exit.code is None or isinstance(exit.code, int):
            return exit.code or 0
        print(exit.code, file=sys.stderr)  # sys.exit("message"): printed, status 1
        return 1
    except Exception:
        traceback.print_exc()
        return 1
    return 0


@contextlib.contextmanager
def _streams_to(out, err):
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    os.dup2(out.fileno(), 1)
    os.dup2(err.fileno(), 2)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            yield
    finally:
        out.flush()
        err.flush()
        for fd, copy in zip((1, 2), saved, strict=True):
            os.dup2(copy, fd)
            os.close(copy)


@contextlib.contextmanager
def _state_kept(argv: list[str], cwd: Path | None, env: dict[str, str] | None):
    here, path = os.getcwd(), list(sys.path)
    threads = sys.modules["torch"].get_num_threads() if "torch" in sys.modules else None
    try:
        environ = mock.patch.dict(os.environ, env or {}, clear=env is not None)
        with environ, mock.patch.object(sys, "argv", list(argv)):
            if cwd is not None:
                os.chdir(cwd)
            yield
    finally:
        os.chdir(here)
        sys.path[:] = path
        if threads is not None:
            sys.modules["torch"].set_num_threads(threads)
