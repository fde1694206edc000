"""Endpoints that never answer, as a network fails (a test double at the network edge):

- `refused`: nothing listens (the connection is refused at once);
- `full`: a listener whose backlog is full, so the kernel drops new SYNs (a connect
  timeout: the request never left this machine);
- `silent`: a listener that takes the connection and the request and never replies (a read
  timeout: the server may have taken it).

`endpoint(kind)` yields the URL (`http://127.0.0.1:<port>`) of one.
"""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Iterator

ENDPOINTS = ("refused", "full", "silent")


@contextlib.contextmanager
def endpoint(kind: str) -> Iterator[str]:
    with contextlib.ExitStack() as sockets:
        listener = sockets.enter_context(socket.socket())
        listener.bind(("127.0.0.1", 0))
        port = listener.getsockname()[1]
        if kind == "refused":
            listener.close()  # the port stays unused for the test's few seconds
        elif kind == "full":
            listener.listen(0)  # one pending connection fills it
            filler = sockets.enter_context(socket.create_connection(("127.0.0.1", port)))
            filler.settimeout(0.2)
        else:
            assert kind == "silent", kind
            listener.listen(8)
        yield f"http://127.0.0.1:{port}"
