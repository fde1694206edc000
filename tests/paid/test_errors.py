"""The one reading of an HTTP error answer to a paid request, both API branches: a 408 or
429 was not taken (sent again after the server's hint), every 5xx may have been taken
(never sent again without the user's word), any other answer refuses it."""

from __future__ import annotations

import pytest

from workflow_scripts.common.http import ServiceError
from workflow_scripts.paid.errors import Retry, error_answer
from workflow_scripts.paid.retry import not_taken


@pytest.mark.parametrize("status", [500, 502, 503, 504])
def test_every_5xx_is_unsure(status):
    error = error_answer(status, "Service Unavailable", {"retry-after": "3"})
    assert isinstance(error, Retry) and error.unsure and not not_taken(error)
    assert str(error) == f"HTTP {status}: Service Unavailable"


@pytest.mark.parametrize("status", [408, 429])
def test_a_408_or_429_was_not_taken_and_keeps_the_servers_hint(status):
    error = error_answer(status, "slow down", {"retry-after": "3"}, code="rate_limited")
    assert not_taken(error) and error.after == 3.0
    assert str(error) == f"HTTP {status} rate_limited: slow down"


def test_any_other_answer_refuses_the_request():
    assert type(error_answer(400, "bad size")) is ServiceError
