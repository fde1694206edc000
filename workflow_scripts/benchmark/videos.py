"""Videos made elsewhere (`source: videos`), in the official judge's `eval_res` layout.

A model's folder holds `<task>/<name>.mp4` with `<name>` the instance id, optionally
after a `<prefix>_`: the folder's own name (the official layout,
`eval_res/<model>/<task>/<model>_<instance>.mp4`) or the model's registry key. The
benchmark's published generations come without the prefix.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd


def find_videos(key: str, folder: str, instances: pd.DataFrame) -> tuple[dict[str, str], list[str]]:
    """Each instance's video in `folder` by instance id, and a problem per instance
    without exactly one."""
    videos, problems, listed = {}, [], {}
    for instance, task in instances["task"].items():
        task_dir = Path(folder) / task
        if task not in listed:
            listed[task] = {p.name for p in task_dir.iterdir()} if task_dir.is_dir() else set()
        names = [f"{prefix}_{instance}.mp4" for prefix in dict.fromkeys((Path(folder).name, key))]
        names.append(f"{instance}.mp4")
        found = [name for name in names if name in listed[task]]
        if len(found) == 1:
            videos[instance] = str(task_dir / found[0])
        elif found:
            problems.append(
                f"{instance}: model {key!r} has two videos, {' and '.join(found)} ({task_dir})"
            )
        else:
            looked = " or ".join(names)
            problems.append(f"{instance}: no video of model {key!r} ({looked} in {task_dir})")
    return videos, problems
