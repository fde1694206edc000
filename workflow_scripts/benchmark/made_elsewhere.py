"""Videos and images made elsewhere (`source: videos`, `source: images`), in the dataset's
published layout.

A model's folder holds `<task>/<name><suffix>` (`.mp4` for a video, `.png` for an image)
with `<name>` the instance id, optionally after a `<prefix>_`: the folder's own name (the
official judge's layout, `eval_res/<model>/<task>/<model>_<instance>.mp4`) or the model's
registry key. The benchmark's published generations come without the prefix.

As the official judge does, a model is judged on the files its folder holds: a selected
instance without one is missing (counted in the run's coverage table), never a stop.
"""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

SUFFIX = {"video": ".mp4", "image": ".png"}


def find_outputs(
    key: str, folder: str, instances: pd.DataFrame, output: str = "video"
) -> tuple[dict[str, str], list[str], dict[str, str]]:
    """Each instance's `output` (video or image) in `folder` by instance id; a problem per
    instance with two; and each instance without any, with the names looked for."""
    found_by_id, problems, missing, listed = {}, [], {}, {}
    suffix = SUFFIX[output]
    for instance, task in instances["task"].items():
        task_dir = Path(folder) / task
        if task not in listed:
            listed[task] = {p.name for p in task_dir.iterdir()} if task_dir.is_dir() else set()
        prefixes = [f"{prefix}_" for prefix in dict.fromkeys((Path(folder).name, key))]
        names = [f"{prefix}{instance}{suffix}" for prefix in [*prefixes, ""]]
        found = [name for name in names if name in listed[task]]
        if len(found) == 1:
            found_by_id[instance] = str(task_dir / found[0])
        elif found:
            problems.append(
                f"{instance}: model {key!r} has two {output}s, {' and '.join(found)} ({task_dir})"
            )
        else:
            missing[instance] = f"{' or '.join(names)} in {task_dir}"
    return found_by_id, problems, missing


def published_instances(roots: dict[str, str], instances: pd.DataFrame) -> set[str]:
    """The instances of `instances` that some published folder holds a file of: every
    model folder under each root (`roots`: output kind -> the dataset's
    `eval_res/video_model_res` or `eval_res/image_model_res`), `<model>/<task>/` with
    `[<prefix>_]<instance><suffix>` in it."""
    tasks = set(instances["task"])
    held = set()
    for output, root in roots.items():
        suffix = SUFFIX[output]
        for task_dir in Path(root).glob("*/*"):
            if task_dir.name not in tasks or not task_dir.is_dir():
                continue
            task = re.escape(task_dir.name)
            name = re.compile(rf"(?:.+_)?({task}_lv\d+_[^_]+){re.escape(suffix)}")
            held |= {m[1] for p in task_dir.iterdir() if (m := name.fullmatch(p.name))}
    return held & set(instances.index)
