"""Contact sheets, a static HTML gallery, and links to the videos.

Everything lives under the outdir and links with relative paths, so the outdir can be
copied or served as is:

    gallery/index.html                      every model x task, with mean scores
    gallery/<model>/<task>.html             per instance: the task (input image, prompt,
                                            checklist), the judge's verdict per item, the
                                            final video beside its checkpoints, each step
                                            pair's transition label between them
    gallery/<model>/sheets/<instance>.png   rows: checkpoints in step order, then "final"
    gallery/inputs/<instance>.png           the input image, 640 px wide
"""

from __future__ import annotations

import os
from collections import defaultdict
from html import escape
from pathlib import Path
from urllib.parse import quote

from PIL import Image

from workflow_scripts.common.logs import job_log
from workflow_scripts.gallery.runs import CHECKPOINT, Run, runs_of

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


def score_text(score: dict | None) -> str:
    """One line: the final score and its parts, the error's reason, or "not judged"."""
    if score is None:
        return "not judged"
    if score["status"] != "ok":
        return f"error: {score.get('reason', 'unknown')}"
    strict = ", strict success" if score["strict_success"] else ""

    def shown(key: str, digits: int) -> str:  # empty after a failed completeness call
        return "n/a" if score[key] is None else f"{score[key]:.{digits}f}"

    return (
        f"final {shown('final', 3)} (completeness {shown('completeness', 2)}, "
        f"rubric {shown('rubric', 3)}{strict})"
    )


def checklist_table(checklist: list[str], score: dict | None, rubric: dict | None) -> str:
    """Each checklist item with the judge's x_i and evidence (dashes before judging)."""
    polish = ((rubric or {}).get("polish") or {}).get("checklist") or []
    evidence = {entry["index"]: entry["evidence"] for entry in polish}
    counts = (score or {}).get("violations") or []
    rows = "".join(
        f"<tr><td>{n}</td><td>{escape(item)}</td>"
        f"<td>{counts[n - 1] if n <= len(counts) else '-'}</td>"
        f"<td>{escape(evidence.get(n, '-'))}</td></tr>"
        for n, item in enumerate(checklist, 1)
    )
    header = "<tr><th>#</th><th>checklist item</th><th>x_i</th><th>evidence</th></tr>"
    return f"<table>{header}{rows}</table>"


def completeness_text(document: dict | None) -> str:
    """The completeness tier, its score and the judge's reasoning."""
    if not document or "tier" not in document:
        return "not judged" if not document else f"error: {document.get('reason')}"
    return f"tier {document['tier']} (score {document['tier'] / 2:g}): {document['reasoning']}"


def pair_figure(pair: dict) -> str:
    """A step pair's transition label, its source and the VLM's evidence."""
    return (
        f'<div class="pair"><b>{pair["from"]} → {pair["to"]}</b>{escape(pair["label"])} '
        f"({escape(pair['source'])})<br><small>{escape(pair['evidence'] or '')}</small></div>"
    )


def video_row(run: Run, page: Path, pairs: list[dict]) -> str:
    """The final video, then the checkpoints in step order, each step pair's label between
    its two x0 checkpoints; labelled pairs that are not neighbours there, after them."""
    labelled = {(pair["from"], pair["to"]): pair for pair in pairs}
    *checkpoints, final = run.videos()
    cells, previous = [], None
    for label, video in [final, *checkpoints]:
        match = CHECKPOINT.fullmatch(video.name)
        if match and not match[2]:
            step = int(match[1])
            if (previous, step) in labelled:
                cells.append(pair_figure(labelled.pop((previous, step))))
            previous = step
        cells.append(
            f'<figure><video controls muted loop preload="metadata" src="{url(video, page)}">'
            f"</video><figcaption>{escape(label)}</figcaption></figure>"
        )
    cells += [pair_figure(pair) for pair in labelled.values()]
    return f'<div class="videos">{"".join(cells)}</div>'


def instance_section(run: Run, page: Path, task: dict) -> str:
    """One instance: its task and the judge's verdict, its videos and transition labels,
    its contact sheet. `task` holds `prompt`, `goal`, `checklist` and `thumbnail`."""
    score = run.score()
    css = ' class="error"' if score and score["status"] != "ok" else ""
    labels = (run.transitions() or {}).get("pairs", [])
    verdict = checklist_table(task["checklist"], score, run.judged("rubric"))
    completeness = completeness_text(run.judged("completeness"))
    return (
        f'<section id="{escape(run.instance)}"><h2>{escape(run.instance)}</h2>'
        f"<p{css}>{escape(score_text(score))}</p>"
        f'<div class="task"><img src="{url(task["thumbnail"], page)}" alt="input image">'
        f"<div><p><b>Prompt</b>: {escape(task['prompt'])}</p>"
        f"<p><b>Goal</b>: {escape(task['goal'])}</p>"
        f"<p><b>Completeness</b>: {escape(completeness)}</p>{verdict}</div></div>"
        f"{video_row(run, page, labels)}"
        f'<p><img src="{url(run.sheet, page)}" alt="contact sheet of '
        f'{escape(run.instance)}"></p></section>'
    )


def task_page(runs: list[Run], page: Path, tasks: dict[str, dict]) -> str:
    """Every instance of one model x task (`tasks`: as `instance_section` takes, by instance)."""
    sections = [instance_section(run, page, tasks[run.instance]) for run in runs]
    back = f'<p><a href="{url(page.parents[1] / "index.html", page)}">all models</a></p>'
    return html_page(f"{runs[0].model} / {runs[0].task}", back + "\n".join(sections))


def thumbnail(image: Path, path: Path, width: int = 640) -> None:
    """`image` scaled to `width` px as `path` (PNG), unless `path` is newer already."""
    if path.is_file() and path.stat().st_mtime >= image.stat().st_mtime:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    with Image.open(image) as source:
        height = round(width * source.height / source.width)
        source.convert("RGB").resize((width, height), Image.LANCZOS).save(path)


def index_row(runs: list[Run], page: Path, index: Path) -> str:
    """A task's row: link, instances, judged (ok), mean final over those, errors."""
    scores = [run.score() for run in runs]
    finals = [s["final"] for s in scores if s and s["status"] == "ok"]
    mean = f"{sum(finals) / len(finals):.3f}" if finals else "-"
    errors = sum(1 for s in scores if s and s["status"] != "ok")
    cells = [f'<a href="{url(page, index)}">{escape(runs[0].task)}</a>', len(runs)]
    cells += [len(finals), mean, errors]
    return "<tr>" + "".join(f"<td>{cell}</td>" for cell in cells) + "</tr>"


# The run's progress and costs beside the gallery (workflow_scripts.study, under the
# outdir): written by the run itself (the costs when it ends), not by the gallery job.
STUDY_FILES = {"status": "../status.html", "costs": "../tables/costs.csv"}
STUDY_LINKS = (
    f'<p>The run: <a href="{STUDY_FILES["status"]}">status</a>, '
    f'<a href="{STUDY_FILES["costs"]}">costs</a> (tables/costs.csv, written when a run ends).</p>'
)


def write_gallery(runs: list[Run], folder: Path, tasks: dict[str, dict]) -> list[Path]:
    """`index.html`, `<model>/<task>.html` and the input thumbnails in `folder`; returns the
    pages written. `tasks`: by instance, its `image` (path), `prompt`, `goal`, `checklist`."""
    tasks = {
        instance: {**task, "thumbnail": folder / "inputs" / f"{instance}.png"}
        for instance, task in tasks.items()
    }
    for instance in {run.instance for run in runs}:
        thumbnail(Path(tasks[instance]["image"]), tasks[instance]["thumbnail"])
    groups: dict[tuple[str, str], list[Run]] = defaultdict(list)
    for run in runs:
        groups[run.model, run.task].append(run)
    index, pages, rows = folder / "index.html", [], defaultdict(list)
    for (model, task), group in groups.items():
        page = folder / model / f"{task}.html"
        page.parent.mkdir(parents=True, exist_ok=True)
        page.write_text(task_page(group, page, tasks), encoding="utf-8")
        pages.append(page)
        rows[model].append(index_row(group, page, index))
    columns = ("task", "instances", "judged", "mean final", "errors")
    header = "<tr>" + "".join(f"<th>{column}</th>" for column in columns) + "</tr>"
    body = STUDY_LINKS + "".join(
        f"<h2>{escape(model)}</h2><table>{header}{''.join(lines)}</table>"
        for model, lines in rows.items()
    )
    index.write_text(html_page("Gallery", body), encoding="utf-8")
    return [index, *pages]


def gallery_job(smk) -> None:
    """Rule `gallery`: the index and one page per model x task. `params.tasks` holds each
    instance's texts, `input.images` their input images in the same order."""
    tasks = {
        instance: {**texts, "image": image}
        for (instance, texts), image in zip(smk.params.tasks.items(), smk.input.images, strict=True)
    }
    with job_log(smk):
        pages = write_gallery(runs_of(smk), Path(smk.output.index).parent, tasks)
        print(f"{len(pages)} pages")
