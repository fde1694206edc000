"""`snakemake plan` on the paper's study (config/paper.yaml: its open, VBVR and commercial
video models and its image models over the half subset, at its prices) at the release's
size: its table and its CPU cost.

Builds, in a temporary directory, dag_scale.py's synthetic benchmark in the official
layout (27 tasks x 3 levels x 10 instances; `subset: half` keeps 405; 16 tasks ship an
image prompt, as in the release, so an image model has 240) and plans config/paper.yaml's
models as config/models.yaml ships them (a plan needs no weights and no key), with the
judge enabled and nothing run yet. It times, as child processes (CPU
seconds from `os.wait4`, children included; median of `--repeats`):

- `dry run`: `snakemake -n --quiet` (the whole study's DAG);
- `plan`: `snakemake plan` (parses the workflow, runs the plan job);
- `plan -n`: `snakemake -n plan` (the same without the job), so the plan job's own CPU is
  `plan` - `plan -n`;

and, in this process, one write of the status page (`study.status.StatusWriter`, as a
run's main process makes it on a job event) once the first two models' videos are made,
judged and labelled (fake documents, 810 instances): the first write (every document
read), a write after a job ended (its (model, task) counted again), and a write counting
every (model, task) again (every document looked at; none changed, so none parsed).

Batching (`resources.batch`, docs/cluster.md#batches): the plan takes the registry's time
limit per video until a video is measured, so it changes only once one is. The bench then
writes, in another outdir, the first `--batch` videos of each GPU video model as measured at
that limit, of which `--load-s` seconds load the weights, and gives the study's GPU-hours
left with a job per video and with `--batch` videos a job (the load once per batch).

    python bench/plan_cost.py [--repeats N] [--tasks N] [--batch N] [--load-s S] [--smoke]

`--tasks N` keeps the first N tasks of the taxonomy (`benchmark.tasks`); `--smoke` (CI) is
`--tasks 1 --repeats 1`: the paper's models over one task's 15 instances.

Prints the plan (and what its cost leaves out for want of a price), a table of the timings,
then (last line) one JSON object.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

import pandas as pd
import yaml
from dag_scale import OVERLAP, REPO, TAXONOMY, build_benchmark, snakemake
from snakemake.api import SnakemakeApi
from snakemake.settings.types import ConfigSettings, OutputSettings, ResourceSettings

from workflow_scripts.common.files import write_json
from workflow_scripts.common.layout import MAIN
from workflow_scripts.study.documents import LABELS, Study
from workflow_scripts.study.plan import plan_table
from workflow_scripts.study.prices import unpriced
from workflow_scripts.study.status import StatusWriter

PAPER = yaml.safe_load((REPO / "config/paper.yaml").read_text(encoding="utf-8"))
IMAGE_TASKS = 16  # of the release's 27 tasks, those that ship an image prompt (docs/images.md)
RUNS = {"dry run": ["-n", "--quiet"], "plan": ["plan"], "plan -n": ["plan", "-n", "--quiet"]}


def write_config(tmp: Path, tasks: int | None) -> Path:
    """The half study of config/paper.yaml's models at its prices (of the first `tasks`
    tasks of the taxonomy; None: all)."""
    names = [task for domain in yaml.safe_load(TAXONOMY.read_text()).values() for task in domain]
    config = {
        "outdir": str(tmp / "results"),
        "model_registry": str(REPO / "config/models.yaml"),
        "benchmark": {
            "root": str(tmp / "bench_data"),
            "taxonomy": str(TAXONOMY),
            "overlap": str(OVERLAP),
            "paper_table": str(REPO / "tasks/paper_tables.csv"),
            "paper_image_table": str(REPO / "tasks/paper_table4.csv"),
            "subset": "half",
            "tasks": names[:tasks] if tasks else "all",
        },
        "models": PAPER["models"],
        "image_models": PAPER["image_models"],
        "prices": PAPER["prices"],
        "judge": {"enabled": True, "api_key_env": "DAG_SCALE_UNUSED_KEY"},
    }
    path = tmp / "config_half.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def fake_documents(study: Study, runs: int = 2) -> None:
    """generation.json, the main judge's score.json and the transition labels of every
    instance of the first `runs` run keys (figures of the size a real study records)."""
    tokens = {"prompt": 30000, "total": 34000}
    made = {"status": "ok", "seconds": {"load": 60, "denoise": 11000, "decode": 300}}
    for run in list(study.runs.values())[:runs]:
        for instance in run.instances:
            write_json(study.generation(run, instance), made)
            for stage, calls in ((MAIN, 8), (LABELS, 6)):
                document = {"status": "ok", "calls": calls, "cached_calls": 0, "tokens": tokens}
                write_json(study.document(stage, run, instance), document)


def cpu_ms(action) -> float:
    """The CPU milliseconds of `action()`."""
    start = time.process_time()
    action()
    return round(1000 * (time.process_time() - start), 1)


def parsed_study(tmp: Path, config: Path) -> tuple[Study, dict]:
    """The study and its prices as the parsed workflow has them (`study_description()`)."""
    os.environ.setdefault("DAG_SCALE_UNUSED_KEY", "not-used: no job runs")
    with SnakemakeApi(OutputSettings()) as api:
        workflow = api.workflow(
            resource_settings=ResourceSettings(cores=1),
            config_settings=ConfigSettings(configfiles=[config]),
            snakefile=REPO / "Snakefile",
            workdir=tmp,
        )._workflow
        return Study.from_dict(workflow.globals["study_description"]()), workflow.config["prices"]


def status_write_cost(study: Study, prices: dict) -> dict:
    """CPU ms of status writes on the study."""
    fake_documents(study)
    writer = StatusWriter(study, prices, "--cores 1", say=lambda line: None)
    first = cpu_ms(writer.write)
    model, task = next(iter(writer.instances))
    writer.ended({"wildcards": {"model": model, "task": task}})
    one = cpu_ms(writer.write)
    writer.dirty = set(writer.instances)
    return {"first_ms": first, "one_job_ms": one, "every_task_ms": cpu_ms(writer.write)}


def batched_hours(study: Study, prices: dict, outdir: Path, batch: int, load_s: float) -> dict:
    """The study's GPU-hours left, a job per video and `batch` videos a job, once the first
    `batch` videos of each GPU video model are made at the registry's time per video, of
    which `load_s` load the weights (in `outdir`, apart from the study's)."""
    study = dataclasses.replace(study, outdir=str(outdir))
    gpu = [run for run in study.runs.values() if run.on_gpu and run.output == "video"]
    for run in gpu:
        seconds = {"load": load_s, "denoise": 60 * run.runtime_min - load_s, "decode": 0}
        for instance in list(run.instances)[:batch]:
            write_json(study.generation(run, instance), {"status": "ok", "seconds": seconds})
    hours = {}
    for size in (1, batch):
        sized = {run.key: dataclasses.replace(run, batch=size) for run in gpu}
        plan = plan_table(dataclasses.replace(study, runs=study.runs | sized), prices)
        hours[size] = round(float(plan["gpu_hours_left"].iloc[-1]), 1)
    return {"batch": batch, "load_s": load_s, "videos_made": batch * len(gpu),
            "gpu_hours_left": hours}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=3, help="runs of each command")
    parser.add_argument("--tasks", type=int, help="the first N tasks of the taxonomy (all)")
    parser.add_argument("--batch", type=int, default=4, help="videos per generate job (4)")
    parser.add_argument("--load-s", type=float, default=60.0,
                        help="seconds loading the weights, of a video's time (60)")  # fmt: skip
    parser.add_argument("--smoke", action="store_true", help="CI: --tasks 1 --repeats 1")
    args = parser.parse_args()
    if args.smoke:  # the sizes shrink; flags given explicitly still win
        parser.set_defaults(tasks=1, repeats=1)
        args = parser.parse_args()
    repeats, batch, load_s = args.repeats, args.batch, args.load_s
    load = os.getloadavg()[0]
    figures: dict = {}
    with tempfile.TemporaryDirectory(prefix="plan_cost_") as name:
        tmp = Path(name)
        build_benchmark(tmp / "bench_data", image_tasks=IMAGE_TASKS)
        config = write_config(tmp, args.tasks)
        for label, args in RUNS.items():
            runs = [snakemake(tmp, config, *args) for _ in range(repeats)]
            figures[label] = {
                "cpu_s": round(statistics.median(r[1] for r in runs), 2),
                "wall_s": round(statistics.median(r[0] for r in runs), 2),
                "peak_mb": round(max(r[2] for r in runs), 1),
            }
        plan = pd.read_csv(tmp / "results" / "plan.csv")
        study, prices = parsed_study(tmp, config)
        left_out = unpriced(study, prices)
        batched = batched_hours(study, prices, tmp / "batched", batch, load_s)
        write = status_write_cost(study, prices)
    print(plan.to_string(index=False, na_rep=""))
    print("".join(f"not in cost_left: {line}\n" for line in left_out))
    print(f"{'command':<10}{'CPU s':>8}{'wall s':>8}{'peak MB':>9}")
    for label, f in figures.items():
        print(f"{label:<10}{f['cpu_s']:>8}{f['wall_s']:>8}{f['peak_mb']:>9}")
    job = round(figures["plan"]["cpu_s"] - figures["plan -n"]["cpu_s"], 2)
    print(f"the plan job's own CPU: {job} s; median of {repeats}; load average {load:.2f}")
    print(f"a status write, CPU ms: first {write['first_ms']}, after one job "
          f"{write['one_job_ms']}, every (model, task) again {write['every_task_ms']}")  # fmt: skip
    hours = batched["gpu_hours_left"]
    print(f"GPU-hours left once the first {batch} videos of each GPU model are measured "
          f"({load_s:g} s of each loading the weights): {hours[1]} at a job per video, "
          f"{hours[batch]} at {batch} a job; nothing measured: "
          f"{plan['gpu_hours_left'].iloc[-1]:.1f} either way")  # fmt: skip
    figures.update(
        batching=batched,
        plan_job_cpu_s=job,
        status_write_cpu_ms=write,
        plan=plan.fillna("").to_dict("records"),
        not_priced=left_out,
        load_avg_before=round(load, 2),
        load_avg_after=round(os.getloadavg()[0], 2),
        cpus=os.cpu_count(),
    )
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
