"""Which judge a table's numbers come from, and when it drifted.

Every table records its judge: `judge_model` (the configured model id) and
`judge_model_version` (each version the replies behind the table reported, as the API
names it: Gemini's `modelVersion`, an OpenAI-compatible server's `model`). `judge_note` is
empty unless the table mixes versions (a model silently rerouted mid-study: the tables
compare answers of two judges) or its judge is not the paper's; the status page says the
same (`study.status_page`). A table whose rows compare judges (tables/judge_reliability*,
judge_agreement*) says it per row, for the judge(s) the row names (`per_judge`). Versions
are counted per document (a score.json or a
transitions.json: a document whose calls reported several counts for each); a document
without one (an error without a reply, a server that reports none) is not counted.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

PAPER_JUDGE = "gemini-3-flash-preview"  # the paper's judge (Appendix C.1)
COLUMNS = ("judge_model", "judge_model_version", "judge_note")


def versions(reported: Iterable[str | None]) -> Counter:
    """The documents per version, from each document's `model_version` (None, or one
    version, or several joined by ', ' as the judge writes them)."""
    count = Counter()
    for value in reported:
        if isinstance(value, str) and value:
            count.update({version.strip() for version in value.split(",") if version.strip()})
    return count


def judge_note(model: str, seen: Counter) -> str:
    """'' for the paper's judge answering as one version; else what differs, in one line."""
    notes = []
    if model != PAPER_JUDGE:
        notes.append(f"judge {model} is not the paper's ({PAPER_JUDGE})")
    if len(seen) > 1:
        counted = ", ".join(f"{v} ({n} documents)" for v, n in sorted(seen.items()))
        notes.append(f"judge model versions mixed: {counted}")
    return "; ".join(notes)


def with_judge(table, model: str, reported: Iterable[str | None]):
    """`table` (a DataFrame) with COLUMNS last: the judge `model`, the versions its
    documents `reported` (`versions`), and the note where they drift (`judge_note`)."""
    seen = versions(reported)
    values = (model, ", ".join(sorted(seen)), judge_note(model, seen))
    return table.assign(**dict(zip(COLUMNS, values, strict=True)))


def per_judge(table, models: Mapping[str, str], reported, columns: Sequence[str] = ("judge",)):
    """`table` whose rows name judges of the run (in `columns`: `judge`, or `judge_a` and
    `judge_b`) with COLUMNS for them: each named judge's model (`models`: name -> model),
    the versions of its documents (`reported`: rows of judge and judge_model_version) and
    its note; a row naming two judges joins them with ' / ' (notes: '<name>: <note>')."""
    said = {}
    for name, model in models.items():
        seen = versions(reported.loc[reported["judge"] == name, "judge_model_version"])
        said[name] = (model, ", ".join(sorted(seen)), judge_note(model, seen))
    rows = [[(name, *said[name]) for name in row] for row in table[list(columns)].to_numpy()]
    notes = [
        "; ".join(
            note if len(columns) == 1 else f"{name}: {note}" for name, *_, note in row if note
        )
        for row in rows
    ]
    values = [[" / ".join(judge[k] for judge in row) for row in rows] for k in (1, 2)]
    return table.assign(**dict(zip(COLUMNS, [*values, notes], strict=True)))
