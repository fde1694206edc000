"""The image API's requests and replies, kept outside the job's outputs: an image is paid
for once.

Each request is kept by the digest of everything that decides it (the settings, the
prompt, the input image's bytes) under `<outdir>/cache/image_api/<model_id>/`, each file
written atomically. `<digest>.json` is the request's attempt record, written before the
request leaves and at each turn after:

1. `sending` (since when, which attempt, for which model and instance): the request may be
   out. A job that finds it (the job was killed while the request was out, or no answer
   came, or a 5xx that may come after the service took it) never sends it again on its own:
   it fails, saying that the request may have been paid and how to send it once more
   (`image_api.resubmit: true`). Only a request that surely was not taken (its connection
   never opened, a 408 or 429 after every attempt, an error answer that refuses it) puts
   the record back as it was.
2. `answered`: the reply's bytes as the service sent them are in `<digest>.reply`, before
   any conversion; a rerun converts them again without a request.
3. done: `ok` (the image as PNG in `<digest>.png`), `refused` (the provider's reason, a
   billed answer) or `failed` (a billed reply without an image, or one that does not decode:
   its bytes stay in `<digest>.reply`). A rerun of the job (killed, an output that failed to
   write, `--forcerun`) takes it from here and sends nothing; `resubmit` sends a refused or
   failed one again (paid again).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from vgi_models.state import write_atomic
from workflow_scripts.common.files import OutdirFileError, read_json, write_json

CACHE = Path("cache") / "image_api"
STATES = ("sending", "answered", "ok", "refused", "failed")
DONE = ("ok", "refused", "failed")


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


@dataclass(frozen=True)
class Reply:
    """The service's reply: the image (PNG), or its reason for none (`refused: ...`, a
    refusal; `failed: ...`, a billed reply without an image)."""

    image: bytes | None = None
    reason: str | None = None
    billed: bool = True  # False: a refusal the provider does not bill (no ledger record)


class ReplyCache:
    """The attempt record and kept reply of one request (`digest`) to model `model_id`."""

    def __init__(self, outdir: str | Path, model_id: str, digest: str) -> None:
        folder = Path(outdir) / CACHE / model_id
        self.image, self.record = folder / f"{digest}.png", folder / f"{digest}.json"
        self.reply = folder / f"{digest}.reply"

    def fix(self) -> str:
        return (
            "see whether this request was billed (the provider's console); delete the file "
            f"and the next run asks the service again (paid): {self.record}"
        )

    def state(self) -> dict | None:
        """The attempt record (None: never sent)."""
        record = read_json(self.record, self.fix(), ["status"], optional=True)
        if record is not None and record["status"] not in STATES:
            raise OutdirFileError(self.record, "has an unknown status", self.fix())
        return record

    def read(self) -> Reply | None:
        """The finished reply, or None where the request was not answered and done."""
        record = self.state()
        if record is None or record["status"] not in DONE:
            return None
        if record["status"] == "ok":
            return Reply(image=self.image.read_bytes())
        return Reply(reason=record["reason"])

    def _save(self, record: dict) -> None:
        write_json(self.record, record)

    def sending(self, attempt: int, **which) -> dict | None:
        """Record that the request's `attempt` (1, 2, ...) is about to leave; the record it
        replaces (None: none), which `not_taken` puts back."""
        before = self.state()
        self._save({"status": "sending", "since": now(), "attempt": attempt, **which})
        return before

    def not_taken(self, before: dict | None) -> None:
        """The request surely was not taken: the record as it was before `sending`."""
        if before is None:
            self.record.unlink(missing_ok=True)
        else:
            self._save(before)

    def answered(self, reply: bytes) -> None:
        """Keep the reply's bytes as they came, before any conversion."""
        write_atomic(self.reply, lambda out: out.write(reply))
        self._save(self.state() | {"status": "answered", "answered_at": now()})

    def kept_reply(self) -> bytes:
        return self.reply.read_bytes()

    def done(self, reply: Reply, kept: bytes | None = None) -> None:
        """The request's end: `reply` (its image first); a failed one's answer `kept`."""
        if reply.image is not None:
            write_atomic(self.image, lambda out: out.write(reply.image))
        elif kept is not None:
            write_atomic(self.reply, lambda out: out.write(kept))
        record = self.state() or {}
        if reply.image is not None:
            status = "ok"
        else:
            status = "failed" if reply.reason.startswith("failed: ") else "refused"
        record = record | {"status": status, "at": now()}
        record.pop("reason", None)
        self._save(record | ({} if reply.reason is None else {"reason": reply.reason}))
