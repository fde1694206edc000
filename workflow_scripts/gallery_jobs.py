"""The bodies of the gallery and export rules' scripts: unpack the job, call `gallery`."""

from __future__ import annotations

from pathlib import Path

from workflow_scripts.gallery import Run, link, write_gallery, write_sheets
from workflow_scripts.jobs import job_log


def runs_of(smk) -> list[Run]:
    """The runs whose `video.mp4` the job takes as `input.videos`."""
    return [Run.of(smk.config["outdir"], video) for video in smk.input.videos]


def contact_sheet_job(smk) -> None:
    """Rule `contact_sheet`: a sheet per instance of one model, in one folder."""
    runs = runs_of(smk)
    with job_log(smk):
        write_sheets(runs, Path(smk.output[0]), smk.params.columns, smk.params.tile_width)
        print(f"{len(runs)} contact sheets")


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


def export_official_job(smk) -> None:
    """Rule `export_official`: link each of one model's videos to its name in the official
    judge's layout, `<model>/<task>/<model>_<instance>.mp4` under the job's folder."""
    folder = Path(smk.output[0])
    with job_log(smk):
        for run in runs_of(smk):
            link(run.folder / "video.mp4", folder / run.task / f"{run.model}_{run.instance}.mp4")
        print(f"{len(smk.input.videos)} videos linked")
