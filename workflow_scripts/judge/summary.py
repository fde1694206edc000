"""What a run ends with about the judge: a service failure that stopped it, and how many
of its outputs are errors, and where they are listed."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable
from pathlib import Path

from workflow_scripts.common import layout
from workflow_scripts.common.files import read_json, write_text
from workflow_scripts.common.redact import redact


def _statuses(paths: Iterable[str]) -> dict[str, dict]:
    """The status document of every existing file among `paths`, by path."""
    found = {}
    for path in map(Path, paths):
        if path.is_file():
            document = read_json(path, layout.stage_fix(path), ["status"])
            found[str(path)] = {"status": document.get("status"), "reason": document.get("reason")}
    return found


def judge_errors_line(
    judged: Iterable[str], labelled: Iterable[str], since: float, listing: str | Path
) -> str | None:
    """'Judge: errors in E of N scores and F of M transition labels, listed in <listing>'
    (a kind with no file left out), from the folders of rules `judge` (`judged`) and
    `label_transitions` (`labelled`).

    None when no score or label file was written since `since` (a run that did not touch
    the judge's outputs). The errors are written to `listing` (CSV: kind, file, reason);
    with none, an old listing is removed.
    """
    scores = [str(path) for *_, path in layout.documents(judged, "score.json")]
    labels = [str(path) for *_, path in layout.documents(labelled, None)]
    touched = any(Path(p).is_file() and Path(p).stat().st_mtime >= since for p in scores + labels)
    if not touched:
        return None
    found = {"score": _statuses(scores), "transitions": _statuses(labels)}
    errors = [
        (kind, path, redact(doc["reason"]) if isinstance(doc["reason"], str) else doc["reason"])
        for kind, docs in found.items()
        for path, doc in docs.items()
        if doc["status"] == "error"
    ]
    counts = {kind: sum(1 for e in errors if e[0] == kind) for kind in found}
    names = {"score": "scores", "transitions": "transition labels"}
    parts = [f"{counts[k]} of {len(docs)} {names[k]}" for k, docs in found.items() if docs]
    summary = f"Judge: errors in {' and '.join(parts)}"
    listing = Path(listing)
    if not errors:
        listing.unlink(missing_ok=True)
        return summary + "."
    rows = io.StringIO(newline="")
    writer = csv.writer(rows)
    writer.writerow(["kind", "file", "reason"])
    writer.writerows(errors)
    write_text(listing, rows.getvalue())
    return f"{summary}, listed in {listing}."


FAILURE = "judge service failure: "


def service_failure_line(logs: str | Path, since: float) -> str | None:
    """The first judge service failure logged since `since` under `logs`, with its log."""
    for log in sorted(Path(logs).rglob("*.log")):
        if log.stat().st_mtime >= since:
            text = log.read_text(encoding="utf-8", errors="replace")
            for line in text.splitlines():
                if line.startswith(FAILURE):
                    return f"{redact(line)} (log: {log})"
    return None
