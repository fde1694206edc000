"""Job logging for the rules' entry points: `script:` entries get Snakemake's job object
(`job_log`); the shell entries parse `--name value` options (`shell_job`). A job that
cannot go on ends with `fail_job`: its message, never a traceback."""

from __future__ import annotations

import argparse
import contextlib
import logging
import sys
from argparse import Namespace
from pathlib import Path
from typing import NoReturn

from workflow_scripts.common.files import OutdirFileError


def fail_job(message: str) -> NoReturn:
    """End the job with exit status 1: `message` in its log (stderr, where `job_log` or
    the rule's redirection sends it) and in Snakemake's output, without a traceback."""
    print(message, file=sys.stderr)
    sys.exit(message)


@contextlib.contextmanager
def job_log(smk):
    """Send the job's stdout, stderr and logging (progress bars included) to its log file;
    a file of the outdir that does not read back (`OutdirFileError`) fails the job."""
    Path(smk.log[0]).parent.mkdir(parents=True, exist_ok=True)
    with (
        open(smk.log[0], "w", encoding="utf-8") as log,
        contextlib.redirect_stdout(log),
        contextlib.redirect_stderr(log),
    ):
        handler = logging.StreamHandler(log)
        logging.getLogger().addHandler(handler)
        try:
            yield
        except OutdirFileError as error:
            fail_job(str(error))
        finally:
            logging.getLogger().removeHandler(handler)


def shell_job(argv: list[str], required: list[str], optional: list[str] = (),
              lists: list[str] = (), flags: list[str] = ()) -> Namespace:  # fmt: skip
    """Set up a shell entry's job: its `--name value` options (each of `required` must be
    given, `optional` ones default to ""; those of `lists` take one value or more, as a
    list; `flags` take none), and logging to stderr, which the rule redirects to the job's
    log file together with stdout."""
    parser = argparse.ArgumentParser(prog=Path(sys.argv[0]).name)
    for name in required:
        parser.add_argument(f"--{name}", required=True, nargs="+" if name in lists else None)
    for name in optional:
        parser.add_argument(f"--{name}", default="")
    for name in flags:
        parser.add_argument(f"--{name}", action="store_true")
    logging.basicConfig(stream=sys.stderr, format="%(message)s")
    return parser.parse_args(argv)
