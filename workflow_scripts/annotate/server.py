"""The annotation page: label checkpoint pairs by hand in the browser (paper Table 7).

    python -m workflow_scripts.annotate --labels labels/human.csv [--configfile my.yaml]
        [--sample 117 --seed 0]

serves, on 127.0.0.1 and a free port it prints, one page per (model, instance, step
pair): both checkpoint videos side by side, playing in sync, the input image, the
prompt, the goal and the checklist, and five label buttons (keys 1-5). Each label is
written at once to the CSV (the format `transitions.human_labels` reads), so a restart
resumes at the first pair without one. The VLM's label is sent to the page only once the
pair is labelled: it shows then, never before (no anchoring). Ctrl-C stops the server.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import re
from functools import partial
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

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
    POST /api/label {"index", "label"}."""

    def __init__(self, *args, annotation: Annotation, **kwargs) -> None:
        self.annotation = annotation
        super().__init__(*args, **kwargs)

    def do_GET(self) -> None:
        if self.path == "/":
            self.send(PAGE.read_bytes(), "text/html; charset=utf-8")
        elif self.path == "/api/items":
            self.send_json(self.annotation.state())
        elif (match := MEDIA.fullmatch(self.path)) and int(match[1]) < len(self.annotation.items):
            self.send_file(self.annotation.media(int(match[1]), match[2]))
        else:
            self.send_error(HTTPStatus.NOT_FOUND)

    def do_POST(self) -> None:
        if self.path != "/api/label":
            return self.send_error(HTTPStatus.NOT_FOUND)
        try:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            index = int(body["index"])
            if not 0 <= index < len(self.annotation.items):
                raise ValueError(f"no item {index}")
            self.send_json(self.annotation.label(index, body["label"]))
        except (KeyError, TypeError, ValueError) as err:
            self.send_error(HTTPStatus.BAD_REQUEST, str(err))

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


def serve(annotation: Annotation, port: int = 0) -> ThreadingHTTPServer:
    """The server, bound to 127.0.0.1 (`port` 0: a free one); not yet serving."""
    return ThreadingHTTPServer(("127.0.0.1", port), partial(Handler, annotation=annotation))


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
    with serve(annotation, args.port) as server:
        done = len(set(annotation.store.labels()) & {item.key for item in items})
        print(f"http://127.0.0.1:{server.server_address[1]}/", flush=True)
        print(f"{len(items)} pairs, {done} labelled; labels go to {labels}", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            server.serve_forever()


if __name__ == "__main__":
    main()
