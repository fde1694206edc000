"""The status page's time left: the measured seconds per video, running jobs partly done,
over the most generate jobs seen at once; none before a video of the model is made."""

from __future__ import annotations

import math
import time

import pandas as pd
import pytest

from workflow_scripts.common.files import write_json
from workflow_scripts.study.documents import Documents, Study
from workflow_scripts.study.status import progress, task_instances
from workflow_scripts.study.status_page import generation_left
from workflow_scripts.study.tally import tally
from workflow_scripts.video_api.ledger import COLUMNS

INSTANCES = {f"sorting_lv1_00{n}": "sorting" for n in range(1, 5)}


def status_of(tmp_path, started: list[float], lanes: dict | None = None,
              others: tuple[str, ...] = (), batch=1) -> tuple[pd.DataFrame, ...]:  # fmt: skip
    """status.csv's and the models' tables of a run whose first video took 60 s, with a
    generate job running on the next videos, each started `started` seconds ago (`lanes`:
    the most generate jobs seen at once; `others`: models with no video made; `batch`:
    videos per generate job)."""
    run = {"kind": "pipeline", "instances": INSTANCES, "main": True, "frames": 9, "fps": 8.0,
           "runtime_min": 15, "batch": batch}  # fmt: skip
    runs = {key: {**run, "model": key} for key in ("m", *others)}
    study = Study.from_dict({"outdir": str(tmp_path), "runs": runs,
                             "judges": {"main": {"model": "x", "protocol": {}}}})  # fmt: skip
    first = study.generation(study.runs["m"], "sorting_lv1_001")
    write_json(first, {"status": "ok", "seconds": {"load": 10, "denoise": 45, "decode": 5}})
    now = time.monotonic()
    jobs = [{"rule": "generate", "state": "running", "started": now - ago,
             "wildcards": {"model": "m", "task": "sorting", "instance": f"sorting_lv1_00{n}"}}
            for n, ago in enumerate(started, 2)]  # fmt: skip
    counts = {key: tally(study, study.runs[key[0]], names, Documents())
              for key, names in task_instances(study).items()}  # fmt: skip
    ledger = pd.DataFrame(columns=COLUMNS)
    table, models, _ = progress(study, counts, jobs, "--cores 1", {}, ledger, lanes)
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


def test_a_batch_loads_the_weights_once_for_its_videos(tmp_path):
    """Batches of two videos (`resources.batch`): the first video's 10 s load is shared, so
    each video takes 55 s, in the status, the plan and the GPU-hours spent."""
    table, models = status_of(tmp_path, [], batch=2)
    assert table.loc[0, "hours_left"] * 3600 == pytest.approx(3 * 55, abs=0.5)
    assert models.loc["m", "plan_gpu_hours"] * 3600 == pytest.approx(55 + 3 * 55, abs=0.5)


def test_two_jobs_seen_at_once_halve_the_time_left_while_one_runs(tmp_path):
    """Between one job's end and the next one's start a single job runs: the time left
    stays at the pace two at once gave, not twice it."""
    _, models = status_of(tmp_path, [15], lanes={"m": 2, "total": 2})
    assert models.loc["m", "hours_left"] * 3600 == pytest.approx((2 + 0.75) * 60 / 2, abs=0.5)


def test_no_time_left_for_a_model_before_its_first_video(tmp_path):
    """The registry's runtime is a time limit (15 min for a tiny model taking seconds), no
    estimate: a model with no video made has no time left, and so neither has the study."""
    table, models = status_of(tmp_path, [15], others=("n",))
    assert models.loc["m", "hours_left"] * 3600 == pytest.approx((2 + 0.75) * 60, abs=0.5)
    assert [math.isnan(models.loc[key, "hours_left"]) for key in ("m", "n", "total")] == [
        False, True, True]  # fmt: skip
    assert table["hours_left"].isna().tolist() == [False, True, True]  # m, n, total
    said = generation_left(models.reset_index())
    assert said == "estimated once each model has made a video (none yet: n)"
