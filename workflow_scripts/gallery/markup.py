"""What the gallery's pages share: their frame, style, relative links and score wording."""

from __future__ import annotations

import os
from html import escape
from pathlib import Path
from urllib.parse import quote

STYLE = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em; color: #222; }
table { border-collapse: collapse; margin-bottom: 1.5em; }
td, th { border: 1px solid #ccc; padding: 0.2em 0.6em; text-align: left; }
section { border-top: 1px solid #ccc; padding: 0.5em 0; }
.videos { display: flex; flex-wrap: wrap; gap: 0.5em; }
figure { margin: 0; }
video { width: 240px; display: block; }
.error { color: #b00; }
.task { display: flex; gap: 1.5em; align-items: flex-start; }
.task img { width: 320px; }
.pair { width: 7em; font-size: 12px; align-self: center; text-align: center;
        overflow-wrap: anywhere; }
.pair b { display: block; font-size: 13px; }
"""


def url(target: Path, page: Path) -> str:
    """`target` as a link from `page`, escaped for an HTML attribute."""
    return escape(quote(Path(os.path.relpath(target, page.parent)).as_posix()))


def html_page(title: str, body: str) -> str:
    """A complete page: `title` as its title and heading, then `body` (HTML)."""
    return (
        f'<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{escape(title)}</title><style>{STYLE}</style></head>\n"
        f"<body>\n<h1>{escape(title)}</h1>\n{body}\n</body></html>\n"
    )


def unjudged_text(judge_off: str | None) -> str:
    """What a run without a score says: the judge off (`judge_off`: why), or not yet."""
    return f"not judged: judge off ({judge_off})" if judge_off else "not judged yet"


def score_text(score: dict | None, unjudged: str) -> str:
    """One line: the final score and its parts, the error's reason, or `unjudged`."""
    if score is None:
        return unjudged
    if score["status"] != "ok":
        return f"error: {score.get('reason', 'unknown')}"
    strict = ", strict success" if score["strict_success"] else ""

    def shown(key: str, digits: int) -> str:  # empty after a failed completeness call
        return "n/a" if score[key] is None else f"{score[key]:.{digits}f}"

    return (
        f"final {shown('final', 3)} (completeness {shown('completeness', 2)}, "
        f"rubric {shown('rubric', 3)}{strict})"
    )
