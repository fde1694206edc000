"""The retry policy of a paid request, both API branches: sent again only where it surely
was not taken (HTTP 408 or 429, a connection that never opened), after the server's hint
or a doubling backoff; an unsure one (`Retry.unsure`: no answer, a 5xx) never."""

from __future__ import annotations

import logging

import tenacity

from workflow_scripts.paid.errors import Retry

log = logging.getLogger(__name__)

BACKOFF_S = (2.0, 60.0)  # first wait and cap, doubling


def not_taken(error: BaseException) -> bool:
    """A request the provider surely did not take (a 408 or 429, never connected)."""
    return isinstance(error, Retry) and not error.unsure


def hinted_backoff(state: tenacity.RetryCallState) -> float:
    """The server's hint, else a doubling backoff (BACKOFF_S: first wait and cap)."""
    hint = state.outcome.exception().after
    return hint or tenacity.wait_exponential(multiplier=BACKOFF_S[0], max=BACKOFF_S[1])(state)


def sent_again_if_not_taken(what: str, attempts: int) -> tenacity.Retrying:
    """Sends `what` (a submission, an image request, a GET) again, up to `attempts` in all,
    where it was not taken (`not_taken`), after the server's hint or a backoff; an unsure
    one never (it may have been taken)."""
    return tenacity.Retrying(
        stop=tenacity.stop_after_attempt(attempts),
        wait=hinted_backoff,
        retry=tenacity.retry_if_exception(not_taken),
        before_sleep=lambda state: log.warning(
            "%s not taken (%s); again in %.1f s",
            what,
            state.outcome.exception(),
            state.next_action.sleep,
        ),
        reraise=True,
    )
