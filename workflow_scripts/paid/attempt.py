"""One paid request's attempt, as both API branches tell the user about it.

A paid request (an image, a video submission) is recorded before it leaves; when no answer
tells whether the service took it (no answer, a 5xx after the body was sent, a job killed
while it was out), the attempt is unsure: it is never sent again unless the user says so
with one config key of the same shape in both branches, `<branch>.resubmit: true`
(`video_api`, `image_api`), given for one run on the command line (`resend_command`).
"""

from __future__ import annotations

import shlex
from pathlib import Path

RESUBMIT = "resubmit"  # the key, under `video_api` or `image_api`


def resend_config(branch: str) -> str:
    """The `--config` value that sends an unsure request of `branch` once more."""
    return f"{branch}={{{RESUBMIT}: true}}"


def resend_command(target: str | Path, branch: str) -> str:
    """The command that makes `target` again, sending its request once more (paid again)."""
    return f"snakemake {shlex.quote(str(target))} --config {shlex.quote(resend_config(branch))}"


def unsure_advice(what: str, record: str | Path, console: str, target: str | Path,
                  branch: str) -> str:  # fmt: skip
    """What a job says of an unsure attempt: it may have been paid, where to look, and the
    command that sends it once more."""
    return (
        f"{what}: it may have been taken and paid. Check the provider's console ({console}) "
        f"and the attempt record {record}. It is not sent again on its own (not by a plain "
        "rerun, --rerun-incomplete or the profile's retries); to send it once more (paid "
        f"again), run: {resend_command(target, branch)} (with your run's own options: "
        "--configfile, --profile, --cores)"
    )
