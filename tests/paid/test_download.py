"""One signed-link download for every provider: one verdict per HTTP answer."""

from __future__ import annotations

import httpx
import pytest

from workflow_scripts.common.http import ServiceError
from workflow_scripts.paid.download import LinkGone, fetch
from workflow_scripts.paid.errors import Retry

URL = "https://storage.example/video.mp4?signature=s"


def client(*statuses: int) -> tuple[httpx.Client, list[int]]:
    """A client whose GETs are answered `statuses` in turn (then 200), and those answered."""
    answered, queue = [], list(statuses)

    def answer(request: httpx.Request) -> httpx.Response:
        status = queue.pop(0) if queue else 200
        answered.append(status)
        return httpx.Response(status, content=b"bytes" if status == 200 else b"AccessDenied")

    return httpx.Client(transport=httpx.MockTransport(answer)), answered


@pytest.mark.parametrize(
    ("status", "verdict"),
    [(403, LinkGone), (404, LinkGone), (410, LinkGone), (408, Retry), (429, Retry),
     (500, Retry), (502, Retry), (503, Retry), (400, ServiceError)],
)  # fmt: skip
def test_each_answer_has_one_verdict(status, verdict):
    http, answered = client(status)
    with pytest.raises(verdict, match=f"HTTP {status}"):
        fetch(http, URL, "the video's link")
    assert answered == [status]  # one attempt: the caller's to try again


def test_a_gets_retry_is_sent_again_a_gone_link_never():
    http, answered = client(503)
    assert fetch(http, URL, "the image's link", attempts=2) == b"bytes" and answered == [503, 200]
    http, answered = client(403)
    with pytest.raises(LinkGone):
        fetch(http, URL, "the image's link", attempts=3)
    assert answered == [403]
