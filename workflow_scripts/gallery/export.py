"""The videos in the official judge's layout, `eval_res/<model>/<task>/<model>_<instance>.mp4`,
as links, so that either judge can score either side's videos."""

from __future__ import annotations

import os
from pathlib import Path

from workflow_scripts.common.logs import job_log
from workflow_scripts.gallery.runs import runs_of


def link(target: Path, path: Path) -> None:
    """Make `path` a relative symlink to `target` (the outdir stays movable), or a hard
    link where the file system refuses symlinks."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)
    try:
        path.symlink_to(os.path.relpath(target, path.parent))
    except OSError:
        os.link(target, path)


def export_official_job(smk) -> None:
    """Rule `export_official`: link each of one model's videos to its name in the official
    judge's layout, `<model>/<task>/<model>_<instance>.mp4` under the job's folder."""
    folder = Path(smk.output[0])
    folder.mkdir(parents=True, exist_ok=True)
    with job_log(smk):
        made = [run for run in runs_of(smk) if not run.generation_error()]  # none: nothing to link
        for run in made:
            link(run.folder / "video.mp4", folder / run.task / f"{run.model}_{run.instance}.mp4")
        print(f"{len(made)} videos linked, {len(smk.input.videos) - len(made)} never made")
