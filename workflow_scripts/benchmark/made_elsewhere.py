"""Videos and images made elsewhere (`source: videos`, `source: images`), in the dataset's
published layout.

A model's folder holds `<task>/<name><suffix>` (`.mp4` for a video, `.png` for an image)
with `<name>` the instance id, optionally after a `<prefix>_`: the folder's own name (the
official judge's layout, `eval_res/<model>/<task>/<model>_<instance>.mp4`) or the model's
registry key. The benchmark's published generations come without the prefix.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

SUFFIX = {"video": ".mp4", "image": ".png"}


def find_outputs(
    key: str, folder: str, instances: pd.DataFrame, output: str = "video"
) -> tuple[dict[str, str], list[str]]:
    """Each instance's `output` (video or image) in `folder` by instance id, and a problem
    per instance without exactly one."""
    found_by_id, problems, listed = {}, [], {}
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
            looked = " or ".join(names)
            problems.append(f"{instance}: no {output} of model {key!r} ({looked} in {task_dir})")
    return found_by_id, problems
