"""The static HTML gallery: the index and a page per model x task.

Everything lives under the outdir and links with relative paths, so the outdir can be
copied, served or opened from disk as is:

    gallery/index.html                      every instance x model at a glance, filtered in
                                            the page (workflow_scripts.gallery.index)
    gallery/<model>/<task>.html             per instance: the task (input image, prompt,
                                            checklist), the judge's verdict per item, the
                                            final video beside its checkpoints, each step
                                            pair's transition label between them
    gallery/<model>/sheets/, thumbs/        contact sheets, thumbnails (rule contact_sheet)
    gallery/inputs/<instance>.png, .jpg     the input image, 640 and 160 px wide
"""

from __future__ import annotations

from collections import defaultdict
from html import escape
from pathlib import Path

from PIL import Image

from vgi_models.input_image import to_rgb
from workflow_scripts.common.files import write_image, write_text
from workflow_scripts.common.logs import job_log
from workflow_scripts.gallery.index import index_page
from workflow_scripts.gallery.markup import html_page, score_text, unjudged_text, url
from workflow_scripts.gallery.runs import CHECKPOINT, JPEG, ImageRun, Run, image_runs_of, runs_of


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


def completeness_text(document: dict | None, unjudged: str) -> str:
    """The completeness tier, its score and the judge's reasoning (none: `unjudged`)."""
    if not document or "tier" not in document:
        return unjudged if not document else f"error: {document.get('reason')}"
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


def instance_section(run: Run, page: Path, task: dict, unjudged: str) -> str:
    """One instance: its task and the judge's verdict (none: `unjudged`, why), its videos
    and transition labels, its contact sheet (a failed generation: its reason instead of
    the videos). `task` holds `prompt`, `goal`, `checklist` and `thumbnail`."""
    score, failed = run.score(), run.generation_error()
    css = ' class="error"' if failed or (score and score["status"] != "ok") else ""
    labels = (run.transitions() or {}).get("pairs", [])
    verdict = checklist_table(task["checklist"], score, run.judged("rubric"))
    completeness = completeness_text(run.judged("completeness"), unjudged)
    shown = (
        f'<p class="error">generation failed: {escape(failed)}</p>'
        if failed
        else f"{video_row(run, page, labels)}"
        f'<p><img src="{url(run.sheet, page)}" alt="contact sheet of '
        f'{escape(run.instance)}"></p>'
    )
    return (
        f'<section id="{escape(run.instance)}"><h2>{escape(run.instance)}</h2>'
        f"<p{css}>{escape(score_text(score, unjudged))}</p>"
        f'<div class="task"><img src="{url(task["thumbnail"], page)}" alt="input image">'
        f"<div><p><b>Prompt</b>: {escape(task['prompt'])}</p>"
        f"<p><b>Goal</b>: {escape(task['goal'])}</p>"
        f"<p><b>Completeness</b>: {escape(completeness)}</p>{verdict}</div></div>"
        f"{shown}</section>"
    )


def task_page(runs: list[Run], page: Path, tasks: dict[str, dict], unjudged: str) -> str:
    """Every instance of one model x task (`tasks`, `unjudged`: as `instance_section`
    takes them, by instance)."""
    sections = [instance_section(run, page, tasks[run.instance], unjudged) for run in runs]
    back = f'<p><a href="{url(page.parents[1] / "index.html", page)}">all models</a></p>'
    return html_page(f"{runs[0].model} / {runs[0].task}", back + "\n".join(sections))


def thumbnail(image: Path, path: Path, width: int) -> None:
    """`image` scaled to `width` px as `path` (PNG or JPEG by its suffix), unless `path` is
    newer already."""
    if path.is_file() and path.stat().st_mtime >= image.stat().st_mtime:
        return
    with Image.open(image) as source:
        height = round(width * source.height / source.width)
        small = to_rgb(source).resize((width, height), Image.LANCZOS)
        write_image(path, small, **(JPEG if path.suffix == ".jpg" else {}))


def write_gallery(runs: list[Run], folder: Path, tasks: dict[str, dict],
                  judge_off: str | None = None) -> list[Path]:  # fmt: skip
    """`index.html`, `<model>/<task>.html` (video models) and the input thumbnails in
    `folder`; returns the pages written. `tasks`: by instance, its `image` (path), `level`,
    `prompt`, `goal`, `checklist`; `judge_off`: why the run judges nothing (None: it
    does, so a video without a score is not judged yet)."""
    inputs = folder / "inputs"
    tasks = {
        instance: {
            **task,
            "thumbnail": inputs / f"{instance}.png",
            "input": inputs / f"{instance}.jpg",
        }
        for instance, task in tasks.items()
    }
    for instance in {run.instance for run in runs}:
        thumbnail(Path(tasks[instance]["image"]), tasks[instance]["thumbnail"], 640)
        thumbnail(Path(tasks[instance]["image"]), tasks[instance]["input"], 160)
    groups: dict[tuple[str, str], list[Run]] = defaultdict(list)
    for run in runs:
        if not isinstance(run, ImageRun):  # an image model's cells link its images
            groups[run.model, run.task].append(run)
    index, pages = folder / "index.html", []
    for (model, task), group in groups.items():
        page = folder / model / f"{task}.html"
        write_text(page, task_page(group, page, tasks, unjudged_text(judge_off)))
        pages.append(page)
    body = index_page(runs, index, tasks, judge_off)
    write_text(index, html_page("Gallery", body))
    return [index, *pages]


def gallery_job(smk) -> None:
    """Rule `gallery`: the index and one page per model x task. `params.tasks` holds each
    instance's level and texts, `input.images` their input images in the same order,
    `params.judge_off` why the run judges nothing (None: it does)."""
    tasks = {
        instance: {**texts, "image": image}
        for (instance, texts), image in zip(smk.params.tasks.items(), smk.input.images, strict=True)
    }
    with job_log(smk):
        runs = runs_of(smk) + image_runs_of(smk)
        pages = write_gallery(runs, Path(smk.output.index).parent, tasks, smk.params.judge_off)
        print(f"{len(pages)} pages")
