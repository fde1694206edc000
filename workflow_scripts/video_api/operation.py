"""One paid video, asked for at most once: the operation kept outside the job's outputs.

The state of an instance's operation is a JSON file in the job's state folder
(`vgi_models.state`: `<outdir>/resume/<run>/<task>/<instance>/<digest>.json`, the digest of
the settings, prompt and image, as a resumable generate job keeps its denoising), written
atomically at each turn:

1. `submitting`, before the request goes out; then `submitted` with the provider's
   operation id as soon as it answers (and the ledger's record), before any waiting.
2. A rerun (a killed job, `--rerun-incomplete`, a SLURM requeue) finds `submitted` and
   waits on the same operation. Once the video is downloaded its bytes are kept beside the
   state (`<digest>.mp4`, as they came) before it is `done`, with its outcome; a rerun of a
   `done` one (a forced rerun, outputs deleted) replays the kept bytes or the recorded
   reason and asks the provider nothing (a state from before the bytes were kept downloads
   the provider's copy again while it lasts).
3. A `submitting` left behind (the job died while the request was out, so nobody knows
   whether the provider took it) or an operation the provider no longer knows (expired)
   stops the job with a message; only `resubmit` (the user's `video_api.resubmit: true`)
   submits again, as it does for a forced rerun of a refused or failed one. A submission
   the service refuses outright (`Refused`: no operation made, none billed) is `done` with
   no operation and the refusal as its outcome. A request the provider answered with 408
   or 429, or that never connected, was not taken: it is sent again after the server's
   hint or a backoff (tenacity: `SUBMISSION`). One answered with a 5xx, or not at all, or
   whose answer could not be read (a 2xx without an operation id) may have been taken:
   `submitting` stays. Only an error answer that refuses it (`ServiceError`), or an error
   raised before the request left, clears the state.

A poll answered with 429 or 5xx is waited out until the deadline, with a backoff that
starts again after each answer: a loop of its own (tenacity counts every attempt, and a
poll's interval is no failure).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path

from vgi_models.state import write_atomic
from workflow_scripts.common.files import OutdirFileError, read_json, write_json
from workflow_scripts.common.http import ServiceError
from workflow_scripts.paid.retry import BACKOFF_S, sent_again_if_not_taken
from workflow_scripts.video_api.ledger import LEDGER
from workflow_scripts.video_api.provider import Outcome, Refused, Retry, UnknownOperation

log = logging.getLogger(__name__)

SUBMIT_ATTEMPTS = 6


SUBMISSION = sent_again_if_not_taken("submission", SUBMIT_ATTEMPTS)


class NotResumable(Exception):
    """The operation cannot be resumed and resubmitting needs the user's word."""


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


# What each status's state holds besides `status` (see the module).
STATE_KEYS = {
    "submitting": ("since",),
    "submitted": ("operation", "submitted_at"),
    "done": ("operation", "submitted_at", "outcome"),
}


def state_fix(path: Path) -> str:
    """What to do about an operation state that does not read back: nobody knows whether
    its video was submitted, so it is the user's call to submit again."""
    # <outdir>/resume/<run>/<task>/<instance>/<digest>.json: <outdir>/ledger/<run>/<task>/<instance>
    ledger = path.parents[4] / LEDGER / Path(*path.parent.parts[-3:])
    return (
        f"see whether this video was submitted already (the ledger's records in {ledger}, "
        "the provider's console). If it was, write "
        '{"status": "submitted", "operation": "<its id>", "submitted_at": "<its time>"} '
        "into the file and the next run waits on that operation; if not, delete the file "
        "and the next run submits the video (paid)"
    )


def read_state(path: Path) -> dict | None:
    """The operation's state in `path` (None: never asked); `OutdirFileError` for one that
    does not read back as a state this module wrote."""
    state = read_json(path, state_fix(path), ["status"], optional=True)
    if state is not None:
        keys = STATE_KEYS.get(state["status"])
        missing = [key for key in keys or () if key not in state]
        if keys is None or missing:
            problem = f"lacks {', '.join(missing)}" if missing else "has an unknown status"
            raise OutdirFileError(path, f"{problem} (not an operation state)", state_fix(path))
    return state


class Operation:
    """The operation of one instance: `state` is its file's content (None: never asked)."""

    def __init__(self, path: Path, provider=None, resubmit: bool = False) -> None:
        self.path, self.provider, self.resubmit = Path(path), provider, resubmit
        self.kept = self.path.with_suffix(".mp4")  # the video's bytes, as downloaded
        self.state = read_state(self.path)
        self.submissions = 0  # by this attempt

    def _save(self, **state) -> None:
        self.state = state
        write_json(self.path, state, indent=1)

    def settled(self) -> Outcome | None:
        """The outcome known without the provider (`provider` may be None): a `done`
        operation's as kept, unless `resubmit` forces a refused or failed one; None where
        the provider must be asked. A submission cut off (`submitting`) stops here
        (`NotResumable`) without `resubmit`."""
        status = self.state and self.state["status"]
        if status == "submitting" and not self.resubmit:
            raise NotResumable(
                f"a submission started at {self.state['since']} never got its operation id "
                "back (the job ended while the request was out, or no answer came)"
            )
        if status != "done" or (self.resubmit and self.state["outcome"] != "ok"):
            return None
        if self.state["outcome"] == "ok" and not self.kept.exists():
            return None  # a state from before the bytes were kept: the provider's copy
        log.info("operation %s done: its outcome as kept, no request", self.state["operation"])
        if self.state["outcome"] != "ok":
            return Outcome(reason=self.state["outcome"])
        return Outcome(video=self.kept.read_bytes())

    def run(self, image: Path, prompt: str, on_submit: Callable[[str], None], poll_s: float,
            timeout_s: float) -> Outcome:  # fmt: skip
        """The finished operation's outcome: the one kept (`settled`), else submitting
        first only where allowed, and waiting."""
        if kept := self.settled():
            return kept
        status = self.state and self.state["status"]
        forced = status == "done" and self.state["outcome"] != "ok"  # `settled` let it through
        if status in (None, "submitting") or forced:
            refused = self._submit(image, prompt, on_submit)
            if refused:
                return refused
        else:
            log.info("resuming operation %s (%s)", self.state["operation"], status)
        try:
            outcome = self._wait(poll_s, timeout_s)
        except UnknownOperation as error:
            if not self.resubmit:
                raise NotResumable(
                    f"the provider no longer knows operation {self.state['operation']} "
                    f"(submitted {self.state['submitted_at']}; {error}): it expired or was "
                    "removed. Set video_api.resubmit: true to submit again (paid again)"
                ) from None
            log.warning(
                "operation %s unknown (%s): submitting again", self.state["operation"], error
            )
            outcome = self._submit(image, prompt, on_submit) or self._wait(poll_s, timeout_s)
        if outcome.ok:
            write_atomic(self.kept, lambda out: out.write(outcome.video))
        self._save(**self.state | {"status": "done", "finished_at": now(),
                                   "outcome": "ok" if outcome.ok else outcome.reason})  # fmt: skip
        return outcome

    def _submit(self, image: Path, prompt: str, on_submit: Callable[[str], None]) -> Outcome | None:
        """Submit, saving the state before and after; the outcome where the service refused
        the submission itself (saved as done), else None."""
        self._save(status="submitting", since=now())
        sent = getattr(self.provider, "submissions_sent", None)
        try:
            operation = SUBMISSION(self.provider.submit, image, prompt)
        except Retry as error:
            if not error.unsure:  # never taken (the last 408 or 429, never connected)
                self.path.unlink()
            raise  # unsure (no answer, a 5xx): `submitting` stays
        except Refused as error:  # the input refused: the instance's recorded error
            self._save(status="done", operation=None, submitted_at=now(), finished_at=now(),
                       outcome=error.reason)  # fmt: skip
            log.warning("submission refused: %s", error.reason)
            return Outcome(reason=error.reason)
        except ServiceError:
            self.path.unlink()  # an error answer that refuses it (a bad request, a key)
            raise
        except Exception as error:
            if sent is not None and self.provider.submissions_sent == sent:
                self.path.unlink()  # raised before the request left: never taken
                raise
            reason = f"the answer could not be read ({type(error).__name__}: {error})"[:300]
            raise Retry(reason, unsure=True) from error  # after it left: `submitting` stays
        self._save(status="submitted", operation=operation, submitted_at=now())
        self.submissions += 1
        log.info("submitted: operation %s", operation)
        on_submit(operation)
        return None

    def _wait(self, poll_s: float, timeout_s: float) -> Outcome:
        operation, deadline, failures = self.state["operation"], time.monotonic() + timeout_s, 0
        while True:
            try:
                outcome = self.provider.poll(operation)
                failures = 0
            except Retry as error:
                failures += 1
                outcome, wait = None, error.after or min(poll_s * 2**failures, BACKOFF_S[1])
                log.warning("polling %s: %s; again in %.1f s", operation, error, wait)
            else:
                wait = poll_s
            if outcome is not None:
                return outcome
            if time.monotonic() + wait > deadline:
                raise TimeoutError(
                    f"operation {operation} still running after {timeout_s / 60:g} min "
                    "(video_api.timeout_min); a rerun waits on it again"
                )
            time.sleep(wait)
