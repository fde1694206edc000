"""The gallery's index: every instance at a glance, filtered in the page.

Per task, a row per instance: its id and level, its input image, and per model side by
side the final video's last frame (a strip of the checkpoints' last frames on demand),
the verdict (the final score, strict success) where judged, and errors marked (a failed
generation or judge, with the reason); then the image models' images with their success
(the image branch, on the tasks that ship an image prompt). Each cell links the model's
task page and the contact sheet. Filters by model, task, level and verdict run in the
page (plain JS, no server, nothing fetched): the outdir opens from disk. Above the grid:
each model's scores per task, and links to the run's status page and cost table (written
by the run itself, workflow_scripts.study: the costs when a run ends, so not by the
gallery job).
"""

from __future__ import annotations

from collections import defaultdict
from html import escape
from pathlib import Path
from typing import NamedTuple

from workflow_scripts.gallery.markup import score_text, unjudged_text, url
from workflow_scripts.gallery.runs import ImageRun, Run

SCRIPT = Path(__file__).with_name("index.js")
VERDICTS = {  # category: what the filter calls it
    "solved": "solved (strict success)",
    "partial": "partly (final > 0)",
    "failed": "failed (final 0)",
    "error": "error",
    "unjudged": "not judged",
}
STYLE = """
#filters { position: sticky; top: 0; background: #fff; padding: 0.5em 0; z-index: 1;
           display: flex; flex-wrap: wrap; gap: 0.3em 1.2em; align-items: center;
           border-bottom: 1px solid #ccc; }
#filters label { white-space: nowrap; }
#grid { border-collapse: collapse; }
#grid td, #grid th { border: 1px solid #ddd; padding: 3px; vertical-align: top;
                     text-align: left; font-weight: normal; }
#grid thead th { font-weight: bold; }
#grid tr.taskrow th { background: #f3f3f3; font-size: 15px; }
#grid tr.taskrow a { margin-left: 0.6em; font-size: 13px; }
.id { font-size: 12px; max-width: 9em; overflow-wrap: anywhere; }
.thumb, .input { width: 160px; height: 90px; object-fit: contain; background: #222;
                 display: block; }
.strip { display: none; height: 23px; max-width: 330px; margin-top: 2px; }
body.strips .strip { display: block; }
.verdict { font-size: 12px; max-width: 160px; }
.solved .verdict { color: #086; font-weight: bold; }
.failed .verdict { color: #555; }
td.error { background: #fee; }
td.error .verdict { color: #b00; overflow-wrap: anywhere; }
.missing { width: 160px; height: 90px; display: flex; align-items: center;
           justify-content: center; background: #fdd; color: #b00; font-size: 12px; }
td.dim > * { opacity: 0.25; }
.sheet { font-size: 11px; }
"""


class Verdict(NamedTuple):
    category: str  # of VERDICTS
    text: str  # the cell's line
    tip: str  # the cell's tooltip: the score's parts or the whole reason
    final: float | None


def image_verdict(run: ImageRun, unjudged: str) -> Verdict:
    """What the index says of an image: success or not, with the judge's reasoning (no
    score: `unjudged`)."""
    score = run.score()
    if score is None:
        return Verdict("unjudged", unjudged, unjudged, None)
    if score["status"] != "ok":
        text = f"error: {score.get('reason', 'unknown')}"
        return Verdict("error", "judge " + text, text, None)
    reasons = score["reasoning"]
    if score["success"]:
        return Verdict("solved", "success", reasons, 1.0)
    return Verdict("failed", "no success", reasons, 0.0)


def verdict(run: Run, unjudged: str) -> Verdict:
    """What the index says of a run: its failed generation, else its score (none:
    `unjudged`, why)."""
    if isinstance(run, ImageRun):
        return image_verdict(run, unjudged)
    if reason := run.generation_error():
        return Verdict("error", f"generation failed: {reason}", reason, None)
    score = run.score()
    text = score_text(score, unjudged)
    if score is None:
        return Verdict("unjudged", text, text, None)
    if score["status"] != "ok":
        return Verdict("error", "judge " + text, text, None)
    final = score["final"]
    if final is None:  # a failed completeness call: flagged, never a 0
        flags = "; ".join(score.get("flags", []))
        return Verdict("error", "no final score", f"{text}; {flags}", None)
    category = "solved" if score["strict_success"] else "partial" if final > 0 else "failed"
    return Verdict(category, f"{final:.2f} {category}", text, final)


def cell(run: Run, shown: Verdict, column: int, index: Path) -> str:
    """A model's cell of an instance's row: thumbnail (or the failure), verdict, links (an
    image model's: its image, linked to itself)."""
    page = url(index.parent / run.model / f"{run.task}.html", index) + f"#{escape(run.instance)}"
    if isinstance(run, ImageRun):
        page, src = url(run.image, index), url(run.image, index)
        picture, sheet = f'<img class="thumb" loading="lazy" alt="image" src="{src}">', ""
    elif run.thumbnail.is_file():
        src = url(run.thumbnail, index)
        picture = f'<img class="thumb" loading="lazy" alt="last frame" src="{src}">'
        if run.strip.is_file():
            picture += f'<img class="strip" loading="lazy" alt="" src="{url(run.strip, index)}">'
        sheet = f'<a class="sheet" href="{url(run.sheet, index)}">contact sheet</a>'
    else:
        picture, sheet = '<div class="missing">no video</div>', ""
    return (
        f'<td class="m{column} {shown.category}" data-v="{shown.category}">'
        f'<a href="{page}" title="{escape(run.model)}: {escape(shown.tip)}">{picture}</a>'
        f'<div class="verdict">{escape(shown.text)}</div>{sheet}</td>'
    )


def summary(runs: list[Run], verdicts: dict[Run, Verdict], column: int, index: Path) -> str:
    """A model's cell of a task's header row: its task page, judged, mean final (an image
    model's: its success rate), errors."""
    shown = [verdicts[run] for run in runs]
    finals = [v.final for v in shown if v.final is not None]
    images = isinstance(runs[0], ImageRun)
    mean = ""
    if finals:
        value = sum(finals) / len(finals)
        mean = f" · success {100 * value:.0f}%" if images else f" · mean final {value:.3f}"
    errors = sum(v.category == "error" for v in shown)
    page = url(index.parent / runs[0].model / f"{runs[0].task}.html", index)
    marked = ' class="error"' if errors else ""
    link = "" if images else f'<a href="{page}">task page</a><br>'
    return (
        f'<td class="m{column}">{link}'
        f"{len(finals)} of {len(runs)} judged{mean} · "
        f"<span{marked}>{errors} errors</span></td>"
    )


def filters(models: list[str], tasks: list[str], levels: list[int]) -> str:
    """The filter bar: a box per model, a list each for task, level and verdict."""

    def options(values, shown=None) -> str:
        pairs = [("", "all"), *((v, (shown or {}).get(v, v)) for v in values)]
        return "".join(
            f'<option value="{escape(str(v))}">{escape(str(t))}</option>' for v, t in pairs
        )

    boxes = "".join(
        f'<label><input type="checkbox" checked data-model="m{k}"> {escape(m)}</label>'
        for k, m in enumerate(models)
    )
    return (
        f'<form id="filters">{boxes}'
        f'<label>task <select id="task">{options(tasks)}</select></label>'
        f'<label>level <select id="level">{options(levels)}</select></label>'
        f'<label>verdict <select id="verdict">{options(VERDICTS, VERDICTS)}</select></label>'
        '<label><input type="checkbox" id="strips"> checkpoint strips</label>'
        '<span id="shown"></span></form>'
    )


# The run's progress and costs, under the outdir beside the gallery.
STUDY_FILES = {"status": "../status.html", "costs": "../tables/costs.csv"}
STUDY_LINKS = (
    f'<p>The run: <a href="{STUDY_FILES["status"]}">status</a>, '
    f'<a href="{STUDY_FILES["costs"]}">costs</a> (tables/costs.csv, written when a run ends).</p>'
)


def index_page(runs: list[Run], index: Path, tasks: dict[str, dict], judge_off: str | None) -> str:
    """The index's body, its style and script included (`tasks`: by instance, its `level`
    and `input` thumbnail; `judge_off`: why the run judged nothing, said once on top)."""
    models = list(dict.fromkeys(run.model for run in runs))
    unjudged = unjudged_text(judge_off)
    verdicts = {run: verdict(run, unjudged) for run in runs}
    notice = f'<p id="judge-off">Judge off: {escape(judge_off)}.</p>' if judge_off else ""
    by_task: dict[str, dict[str, dict[str, Run]]] = defaultdict(lambda: defaultdict(dict))
    for run in runs:
        by_task[run.task][run.instance][run.model] = run
    head = "".join(f'<th class="m{k}">{escape(m)}</th>' for k, m in enumerate(models))
    bodies = []
    for task, instances in by_task.items():
        of_model = [[i[m] for i in instances.values() if m in i] for m in models]
        rows = [
            f'<tr class="taskrow"><th colspan="2">{escape(task)}</th>'
            + "".join(
                summary(g, verdicts, k, index) if g else f'<td class="m{k}"></td>'
                for k, g in enumerate(of_model)
            )
            + "</tr>"
        ]
        for instance, found in instances.items():
            level = tasks[instance]["level"]
            cells = [
                cell(found[m], verdicts[found[m]], k, index)
                if m in found
                else f'<td class="m{k}"></td>'
                for k, m in enumerate(models)
            ]
            rows.append(
                f'<tr data-task="{escape(task)}" data-level="{level}">'
                f'<th class="id" title="{escape(instance)}">{escape(instance[len(task) + 1 :])}'
                f"<br>level {level}</th>"
                f'<td><img class="input" loading="lazy" alt="input image"'
                f' src="{url(tasks[instance]["input"], index)}"></td>{"".join(cells)}</tr>'
            )
        bodies.append(f'<tbody data-task="{escape(task)}">{"".join(rows)}</tbody>')
    return "".join(
        [
            f'<style>{STYLE}</style><style id="hidden-models"></style>',
            STUDY_LINKS,
            notice,
            filters(models, list(by_task), sorted({int(t["level"]) for t in tasks.values()})),
            f'<table id="grid"><thead><tr><th>instance</th><th>input</th>{head}</tr></thead>',
            "".join(bodies),
            f"</table><script>{SCRIPT.read_text(encoding='utf-8')}</script>",
        ]
    )
