"""The annotation page: label checkpoint pairs by hand in the browser (paper Table 7).

    python -m workflow_scripts.annotate --labels labels/human.csv [--configfile my.yaml]
        [--sample 117 --seed 0]

serves, on 127.0.0.1 and a free port, at the URL it prints (with the run's token: open
that URL), one page per (model, instance, step pair): both checkpoint videos side by
side, playing in sync, the input image, the prompt, the goal and the checklist, and five
label buttons (keys 1-5). Each label is written at once to the CSV (the format
`transitions.human_labels` reads), so a restart resumes at the first pair without one.
The VLM's label is sent to the page only once the pair is labelled: it shows then, never
before (no anchoring). Ctrl-C stops the server.

Only the page it served may label: every request must name this server's own host
(`Host`; a DNS name rebound to 127.0.0.1 is refused), come from its own page (`Origin`,
where the browser sends one) and carry the run's token (`?token=` on the page's URL and
its media, the `X-Token` header on the API), so another user of a shared login node, or
a foreign page in the browser, is refused (403). A body is at most MAX_BODY bytes, and a
connection that stalls is closed after `Handler.timeout` seconds.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import secrets
from functools import partial
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from workflow_scripts.annotate.items import (
    PROG,
    Item,
    LabelStore,
    items_of,
    load_run,
    stratified,
)
from workflow_scripts.transitions.labels import LABELS

PAGE = Path(__file__).with_name("page.html")
MEDIA = re.compile(r"/media/(\d+)/(from|to|image)")
NO_CACHE = ("Cache-Control", "no-store")
MAX_BODY = 64 * 1024  # bytes: a label or a ranking is a few dozen
TYPES = {".mp4": "video/mp4", ".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg"}


class Annotation:
    """The items to label, what the page shows of each, and the label store."""

    def __init__(self, items: list[Item], instances, store: LabelStore) -> None:
        self.items, self.instances, self.store = items, instances, store

    def view(self, index: int, labels: dict) -> dict:
        """One item as the page gets it; the VLM's label only once a human labelled it."""
        item, row = self.items[index], self.instances.loc[self.items[index].instance]
        label = labels.get(item.key)
        shown = {"label": label, "vlm_label": item.vlm_label() if label else None}
        return {
            "model": item.model,
            "task": item.task,
            "instance": item.instance,
            "from": item.pair[0],
            "to": item.pair[1],
            "prompt": row["prompt"],
            "goal": row["goal"],
            "checklist": list(row["checklist"]),
            **shown,
        }

    def state(self) -> dict:
        labels = self.store.labels()
        views = [self.view(i, labels) for i in range(len(self.items))]
        return {"labels": list(LABELS), "items": views}

    def label(self, index: int, label: str) -> dict:
        """Save a label; returns the item as the page now shows it (VLM label included)."""
        if label not in LABELS:
            raise ValueError(f"unknown label {label!r}")
        self.store.set(self.items[index].key, label)
        return self.view(index, self.store.labels())

    def media(self, index: int, which: str) -> Path:
        item = self.items[index]
        if which == "image":
            return Path(self.instances.loc[item.instance, "image"])
        return item.video(item.pair[0 if which == "from" else 1])


class Handler(BaseHTTPRequestHandler):
    """GET / (the page), /api/items, /media/<item>/<from|to|image> (byte ranges served);
    POST /api/label {"index", "label"}; each only from the page it served (module
    docstring)."""

    page, media, action = PAGE, MEDIA, "/api/label"
    timeout = 15  # seconds a connection may stall (a body shorter than its Content-Length)

    def __init__(self, *args, annotation, token: str, **kwargs) -> None:
        self.annotation, self.token = annotation, token
        super().__init__(*args, **kwargs)

    def route(self) -> str | None:
        """The request's path if it comes from this server's page with its token; else
        None, the refusal sent."""
        port = self.server.server_address[1]
        hosts = {f"127.0.0.1:{port}", f"localhost:{port}"}
        origin = self.headers.get("Origin")
        url = urlsplit(self.path)
        given = self.headers.get("X-Token") or parse_qs(url.query).get("token", [""])[0]
        if self.headers.get("Host") not in hosts:
            self.send_error(HTTPStatus.FORBIDDEN, "not this server's host")
        elif origin is not None and origin not in {f"http://{host}" for host in hosts}:
            self.send_error(HTTPStatus.FORBIDDEN, "not this server's page")
        elif not secrets.compare_digest(given.encode(), self.token.encode()):
            self.send_error(HTTPStatus.FORBIDDEN, "no token, or not this run's")
        else:
            return url.path
        return None

    def do_GET(self) -> None:
        path, items = self.route(), self.annotation.items
        if path is None:
            return
        if path == "/":
            self.send(self.page.read_bytes(), "text/html; charset=utf-8", headers=[NO_CACHE])
        elif path == "/api/items":
            self.send_json(self.annotation.state())
        elif (match := self.media.fullmatch(path)) and int(match[1]) < len(items):
            self.send_file(self.annotation.media(int(match[1]), match[2]))
        else:
            self.send_error(HTTPStatus.NOT_FOUND)

    def do_POST(self) -> None:
        path = self.route()
        if path is None:
            return
        if path != self.action:
            return self.send_error(HTTPStatus.NOT_FOUND)
        try:
            size = int(self.headers.get("Content-Length", ""))
            if not 0 <= size <= MAX_BODY:
                raise ValueError(f"a body of {size} bytes (at most {MAX_BODY})")
            body = json.loads(self.rfile.read(size))
            index = int(body["index"])
            if not 0 <= index < len(self.annotation.items):
                raise ValueError(f"no item {index}")
            self.send_json(self.save(index, body))
        except (KeyError, TypeError, ValueError) as err:
            self.send_error(HTTPStatus.BAD_REQUEST, str(err))

    def save(self, index: int, body: dict) -> dict:
        """Store what the page sent for item `index`; returns the item as it now shows."""
        return self.annotation.label(index, body["label"])

    def send(self, body: bytes, kind: str, status=HTTPStatus.OK, headers=()) -> None:
        self.send_response(status)
        for name, value in [("Content-Type", kind), ("Content-Length", len(body)), *headers]:
            self.send_header(name, str(value))
        self.end_headers()
        self.wfile.write(body)

    def send_json(self, document) -> None:
        self.send(json.dumps(document).encode(), "application/json", headers=[NO_CACHE])

    def send_file(self, path: Path) -> None:
        """The file, or the byte range asked for (browsers seek videos with ranges)."""
        data = path.read_bytes()
        kind = TYPES.get(path.suffix.lower(), "application/octet-stream")
        ranged = re.fullmatch(r"bytes=(\d*)-(\d*)", self.headers.get("Range", ""))
        if not ranged or not (ranged[1] or ranged[2]):
            return self.send(data, kind, headers=[("Accept-Ranges", "bytes")])
        if ranged[1]:
            start, end = int(ranged[1]), min(int(ranged[2] or len(data) - 1), len(data) - 1)
        else:
            start, end = max(len(data) - int(ranged[2]), 0), len(data) - 1
        if start > end:
            return self.send_error(HTTPStatus.REQUESTED_RANGE_NOT_SATISFIABLE)
        span = ("Content-Range", f"bytes {start}-{end}/{len(data)}")
        headers = [("Accept-Ranges", "bytes"), span]
        self.send(data[start : end + 1], kind, HTTPStatus.PARTIAL_CONTENT, headers)

    def log_message(self, format, *args) -> None:  # noqa: A002 (the base class's name)
        """Quiet: the page's requests are not news."""


def serve(annotation, port: int = 0, handler=Handler) -> tuple[ThreadingHTTPServer, str]:
    """The server, bound to 127.0.0.1 (`port` 0: a free one), not yet serving, and the
    URL to open (with a new token)."""
    token = secrets.token_urlsafe(24)
    server = ThreadingHTTPServer(
        ("127.0.0.1", port), partial(handler, annotation=annotation, token=token)
    )
    return server, f"http://127.0.0.1:{server.server_address[1]}/?token={token}"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog=f"{PROG} [transitions]", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--configfile", action="append", default=[], help="layered as Snakemake")
    parser.add_argument("--labels", help="the CSV (default: transitions.human_labels)")
    parser.add_argument("--sample", type=int, help="label N (model, instance)s, by model")
    parser.add_argument("--seed", type=int, default=0, help="of --sample")
    parser.add_argument("--port", type=int, default=0, help="default: a free one")
    args = parser.parse_args(argv)
    try:
        config, study, pairs = load_run(args.configfile)
    except ValueError as err:  # a missing config file, a bad key: one line, no traceback
        parser.exit(2, f"{PROG}: error: {err}\n")
    labels = args.labels or config["transitions"]["human_labels"]
    if not labels:
        parser.error("--labels is needed when transitions.human_labels is not set")
    items = items_of(study, pairs, config["outdir"])
    if args.sample is not None:
        items = stratified(items, args.sample, args.seed)
    if not items:
        parser.error(f"no decoded checkpoint pairs under {config['outdir']}: run generate first")
    annotation = Annotation(items, study.instances, LabelStore(labels))
    server, url = serve(annotation, args.port)
    with server:
        done = len(set(annotation.store.labels()) & {item.key for item in items})
        print(url, flush=True)
        print(f"{len(items)} pairs, {done} labelled; labels go to {labels}", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            server.serve_forever()


if __name__ == "__main__":
    main()
