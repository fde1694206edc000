"""The status page's time left: the plan's seconds per video, running jobs partly done."""

from __future__ import annotations

import time

import pandas as pd
import pytest

from workflow_scripts.common.files import write_json
from workflow_scripts.study.documents import Documents, Study
from workflow_scripts.study.status import progress, task_instances
from workflow_scripts.study.tally import tally
from workflow_scripts.video_api.ledger import COLUMNS

INSTANCES = {f"sorting_lv1_00{n}": "sorting" for n in range(1, 5)}


def status_of(tmp_path, started: list[float]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """status.csv's and the models' tables of a run whose first video took 60 s, with a
    generate job running on the next videos, each started `started` seconds ago."""
    run = {"model": "m", "kind": "pipeline", "instances": INSTANCES,
           "main": True, "frames": 9, "fps": 8.0, "runtime_min": 15}  # fmt: skip
    study = Study.from_dict({"outdir": str(tmp_path), "runs": {"m": run},
                             "judges": {"main": {"model": "x", "protocol": {}}}})  # fmt: skip
    first = study.generation(study.runs["m"], "sorting_lv1_001")
    write_json(first, {"status": "ok", "seconds": {"load": 10, "denoise": 45, "decode": 5}})
    now = time.monotonic()
    jobs = [{"rule": "generate", "state": "running", "started": now - ago,
             "wildcards": {"model": "m", "task": "sorting", "instance": f"sorting_lv1_00{n}"}}
            for n, ago in enumerate(started, 2)]  # fmt: skip
    counts = {key: tally(study, study.runs["m"], names, Documents())
              for key, names in task_instances(study).items()}  # fmt: skip
    table, models, _ = progress(study, counts, jobs, "--cores 1", {}, pd.DataFrame(columns=COLUMNS))
    return table, models.set_index("model")


@pytest.mark.parametrize(
    ("started", "work_s", "wall_s"),
    [
        ([], 3 * 60, 3 * 60),  # 3 videos left at the measured 60 s, none running
        ([15], (2 + 0.75) * 60, (2 + 0.75) * 60),  # a job a quarter done
        ([15, 45], (1 + 0.75 + 0.25) * 60, 60),  # two at once: the wall time halves
        ([90], 2 * 60, 2 * 60),  # a job past the mean counts as done
    ],
)
def test_time_left_counts_running_jobs_as_partly_done(tmp_path, started, work_s, wall_s):
    table, models = status_of(tmp_path, started)
    assert table.loc[0, "hours_left"] * 3600 == pytest.approx(work_s, abs=0.5)
    assert models.loc["m", "hours_left"] * 3600 == pytest.approx(wall_s, abs=0.5)
    assert models.loc["total", "hours_left"] == models.loc["m", "hours_left"]
    assert table.loc[0, "running"] == len(started) and table.loc[0, "generated"] == 1
