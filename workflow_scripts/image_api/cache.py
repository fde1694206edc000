"""The image API's replies, kept outside the job's outputs: an image is paid for once.

Each reply is kept by the digest of everything that decides it (the settings, the
prompt, the input image's bytes) under `<outdir>/cache/image_api/<model_id>/`, written
atomically as soon as it arrives, before the job's outputs: `<digest>.png` (the image)
and `<digest>.json` (when it came, for which model and instance, or the refusal's
reason). A rerun of the job (killed, an output that failed to write, `--forcerun`) with
the same inputs takes the reply from here and sends nothing.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from vgi_models.state import write_atomic
from workflow_scripts.common.files import read_json

CACHE = Path("cache") / "image_api"


@dataclass(frozen=True)
class Reply:
    """The service's reply: the image (PNG), or its reason for none (a refusal)."""

    image: bytes | None = None
    reason: str | None = None


class ReplyCache:
    """The kept reply to one request (`digest`) to model `model_id`."""

    def __init__(self, outdir: str | Path, model_id: str, digest: str) -> None:
        folder = Path(outdir) / CACHE / model_id
        self.image, self.record = folder / f"{digest}.png", folder / f"{digest}.json"

    def read(self) -> Reply | None:
        """The kept reply, or None where the request was never answered."""
        if self.image.exists():
            return Reply(image=self.image.read_bytes())
        fix = f"delete it, and the next run asks the service again (paid): {self.image.parent}"
        record = read_json(self.record, fix, ["status"], optional=True)
        if record is None or record["status"] != "refused":
            return None
        return Reply(reason=record["reason"])

    def write(self, reply: Reply, **which) -> None:
        """Keep `reply` (its image first), with `which` request it answered."""
        if reply.image is not None:
            write_atomic(self.image, lambda out: out.write(reply.image))
        refused = {} if reply.reason is None else {"reason": reply.reason}
        record = {"status": "refused" if refused else "ok", **refused}
        record["at"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
        text = json.dumps(record | which, indent=2) + "\n"
        write_atomic(self.record, lambda out: out.write(text.encode()))
