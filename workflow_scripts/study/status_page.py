"""status.html: whether the run has ended and whether the judge is off; the judge and the
model versions its replies reported, with a warning where they drift (`judge.drift`); per
model a progress bar each for videos made, judged and labelled (`judge off`: none), the
time left while the run goes and the spend beside the plan's estimate; then the status
table and the errors."""

from __future__ import annotations

import html
import math
from collections import Counter

import pandas as pd

from workflow_scripts.judge.drift import judge_note

STYLE = (
    "body{font-family:sans-serif;margin:1.5em}table{border-collapse:collapse}"
    "td,th{border:1px solid #bbb;padding:.25em .6em;text-align:right}"
    "td:first-child,#status td:nth-child(2),#errors td,#errors th{text-align:left}"
    "#status tr:last-child,#models tr:last-child{font-weight:bold}"
    ".bar{position:relative;width:11em;height:1.3em;background:#e4e4e4;border-radius:3px}"
    ".bar>div{height:100%;background:#5b9bd5;border-radius:3px}"
    ".bar>span{position:absolute;inset:0;text-align:center;line-height:1.3em;font-size:90%}"
    "#models td{white-space:nowrap}.of{color:#666;font-size:90%}code{font-size:90%}"
    ".note{color:#666}#judge-off,#ended,#judge-drift{font-weight:bold}#judge-drift{color:#b00}"
)
NO_BASIS = "after its first video"  # no video of the model made yet: no measured seconds
BARS = {"generated": "videos made", "judged": "judged", "labelled": "labelled"}
SPENT = {"gpu_hours": ("GPU-hours", "{:.3f}"), "calls": ("VLM calls", "{:,.0f}"),
         "tokens": ("tokens", "{:,.0f}")}  # fmt: skip


def duration(hours: float) -> str:
    """`hours` as a person reads it: 40 s, 12 min, 3 h 05 min, 2 d 4 h."""
    seconds = round(hours * 3600)
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min"
    if seconds < 48 * 3600:
        return f"{seconds // 3600} h {seconds % 3600 // 60:02d} min"
    return f"{seconds // 86400} d {seconds % 86400 // 3600} h"


def time_left(hours: float, making: int) -> str:
    """The time left; NO_BASIS before a video of the model is made; `finishing` where the
    jobs running have outrun the measured time."""
    if math.isnan(hours):
        return NO_BASIS
    if hours:
        return duration(hours)
    return "finishing" if making else "—"


def bar(done: int, of: int, column: str) -> str:
    """A progress bar of `done` of `of` (its width: the share done)."""
    width = 100 * done / of if of else 0
    return (f'<div class="bar" data-column="{column}" data-share="{width / 100:.6f}">'
            f'<div style="width:{width:.2f}%"></div><span>{done} / {of}</span></div>')  # fmt: skip


def spent_of(value, planned, form: str) -> str:
    """What was spent, beside the plan's estimate for the whole study."""
    if value is None or pd.isna(value):
        return "not priced"
    estimate = "" if planned is None or pd.isna(planned) else form.format(planned)
    return form.format(value) + (f' <span class="of">of {estimate}</span>' if estimate else "")


def models_table(models: pd.DataFrame, currency: str, judged: bool, going: bool) -> str:
    """The models' progress bars (`judged`: the judge's and labels' too, else `judge
    off`), time left (while the run is `going`) and spend beside the plan."""
    cost = f"cost ({currency})" if currency else "cost"
    head = ["model", *BARS.values(), *(["time left"] if going else [])]
    head += [*(name for name, _ in SPENT.values()), cost]
    lines = ['<table id="models">', "<tr>" + "".join(f"<th>{h}</th>" for h in head) + "</tr>"]
    for row in models.to_dict("records"):
        cells = [html.escape(row["model"])]
        for column in BARS:
            if column != "generated" and not judged:
                cells.append('<span class="note">judge off</span>')
            elif column != "labelled" or row["labels"]:
                cells.append(bar(row[column], row["videos"], column))
            else:
                cells.append("—")
        if going:
            cells.append(time_left(row["hours_left"], row["making"]))
        cells += [spent_of(row[key], row[f"plan_{key}"], form) for key, (_, form) in SPENT.items()]
        cells.append(spent_of(row["cost"], row["plan_cost"], "{:,.2f}"))
        lines.append("<tr>" + "".join(f"<td>{cell}</td>" for cell in cells) + "</tr>")
    return "\n".join([*lines, "</table>"])


def generation_left(models: pd.DataFrame) -> str:
    """The study's time left, or which models have no video made yet to measure."""
    total = models.iloc[-1]
    if math.isnan(total["hours_left"]):
        rows = models.iloc[:-1]
        waiting = rows.loc[rows["hours_left"].isna(), "model"]
        return f"estimated once each model has made a video (none yet: {', '.join(waiting)})"
    if not total["hours_left"]:
        return time_left(0.0, total["making"]).replace("—", "none")
    return duration(total["hours_left"]) + " at the pace of now"


def state_lines(table: pd.DataFrame, models: pd.DataFrame, written: str,
                judge_off: str | None, ended: str | None) -> list[str]:  # fmt: skip
    """The run's state: ended (`ended`: the line saying so) or running, and the time
    left; then the judge off (`judge_off`: why; the plan's VLM calls then are what judging
    would take), once."""
    spend = "Beside each spend so far, the plan's estimate for the whole study (spent + left)."
    if ended:
        lines = [f'<p id="ended">{html.escape(ended)}</p>', f"<p>Written {written}. {spend}</p>"]
    else:
        running = int(table.iloc[-1]["running"])
        left = html.escape(generation_left(models))
        lines = [f"<p>Written {written}; reloads every 30 s. Running now: {running} job(s). "
                 f"Generation left: {left}. {spend}</p>"]  # fmt: skip
    if judge_off:
        calls = models.iloc[-1]["plan_calls"]
        planned = "; the VLM estimates are what judging would take" if calls else ""
        lines.append(f'<p id="judge-off">Judge off: {html.escape(judge_off)}, so this run '
                     f"judges and labels no video{planned}.</p>")  # fmt: skip
    return lines


def judge_lines(model: str, seen: Counter) -> list[str]:
    """The judge `model` and the versions its documents so far reported (`seen`: documents
    per version), then a warning where they drift (`judge.drift.judge_note`)."""
    reported = ", ".join(f"{v} ({n})" for v, n in sorted(seen.items())) or "none yet"
    lines = [f'<p id="judge">Judge: {html.escape(model)}; model versions its replies reported '
             f"(documents): {html.escape(reported)}.</p>"]  # fmt: skip
    if note := judge_note(model, seen):
        lines.append(f'<p id="judge-drift">Judge drift: {html.escape(note)} (the tables say so '
                     "in their judge_note column).</p>")  # fmt: skip
    return lines


def page(table: pd.DataFrame, models: pd.DataFrame, errors: pd.DataFrame, written: str,
         currency: str, judge_off: str | None, ended: str | None,
         judge: tuple[str, Counter] | None = None) -> str:  # fmt: skip
    """status.html: the run's state (`state_lines`; reloading itself until it has ended),
    the judge (`judge`: its model and the documents per version, `judge_lines`), the
    models, the status table, then the errors."""
    lines = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        *([] if ended else ['<meta http-equiv="refresh" content="30">']),
        "<title>Study status</title>",
        f"<style>{STYLE}</style></head><body>",
        "<h1>Study status</h1>",
        *state_lines(table, models, html.escape(written), judge_off, ended),
        *(judge_lines(*judge) if judge and not judge_off else []),
        models_table(models, currency, judge_off is None, ended is None),
        "<h2>By task</h2>",
        table.to_html(index=False, table_id="status", border=0, na_rep=""),
        f"<h2>Errors ({len(errors)})</h2>",
    ]
    if len(errors):
        shown = errors.assign(rerun=[f"<code>{html.escape(c)}</code>" for c in errors["rerun"]])
        shown["reason"] = shown["reason"].map(html.escape)
        lines.append(shown.to_html(index=False, table_id="errors", border=0, escape=False))
    else:
        lines.append("<p>None.</p>")
    return "\n".join([*lines, "</body></html>\n"])
