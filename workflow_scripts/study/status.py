"""A run's progress while it goes: `<outdir>/status.csv`, `status.html`, the terminal.

`StatusWriter` is a `logging.Handler` on Snakemake's logger in the main process: it gets
the run events a logger plugin gets (JOB_INFO when a job starts or is submitted,
JOB_FINISHED, JOB_ERROR with the job's log files), also for jobs on other SLURM nodes,
whose events the main process reports. After each event (at most every `every` seconds,
a timer catching the last) it writes, per (model, task), counted from the documents on
disk (`tally`; only the (model, task) of the jobs that ended since the last write are
counted again): videos, generated, judged (main judge, `ok`), labelled (`ok`), failed
(documents in `error` and jobs of this run that failed), jobs running now, the hours of
generation left, and what was spent so far (GPU-hours, VLM calls, tokens, cost); and the
errors, each with its reason and the command that reruns it. The page (static HTML, it
reloads itself every 30 s until the run has ended, which it then says; `status_page`)
shows the main judge and the model versions its documents report, warning where they
drift (`main_judge`, `judge.drift`), per model a progress bar each for videos made, judged
and labelled (or the judge off, and why), the time left and the spend beside the plan's
estimate for the whole study (spent + the plan's `*_left`, `plan.plan_row`), then the
table and the errors.

Time left of a model: its measured seconds per video (`plan.measured_seconds`; none before
its first video is made: no estimate then, the registry's time limit is no estimate) x
(videos not started + for each of its generate jobs running now, the share of a video it
has still to go, max(0, 1 - its seconds so far / seconds per video)), divided by its
lanes: the most of its generate jobs seen running at once in this run, at most its videos
left (at least 1). The study's: the models' sum over the study's lanes.
"""

from __future__ import annotations

import logging
import math
import shlex
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pandas as pd
from snakemake_interface_logger_plugins.common import LogEvent

from vgi_models.registry import API
from workflow_scripts.common.files import write_text
from workflow_scripts.common.layout import BATCH_RULE, MAIN, judge_folder, stage_folder
from workflow_scripts.common.redact import redact
from workflow_scripts.paid.attempt import resend_config
from workflow_scripts.study.costs import cost_rows, run_costs, study_ledger
from workflow_scripts.study.documents import CHECKPOINTS, IMAGE, LABELS, Documents, Study
from workflow_scripts.study.plan import learn, measured_seconds, plan_row
from workflow_scripts.study.prices import total
from workflow_scripts.study.status_page import page
from workflow_scripts.study.tally import Tally, tally

COLUMNS = ["model", "task", "videos", "generated", "judged", "labelled", "failed", "running",
           "hours_left", "gpu_hours", "calls", "tokens", "cost"]  # fmt: skip
ERRORS = ["model", "task", "instance", "stage", "reason", "rerun"]
MODELS = ["model", "videos", "generated", "judged", "labelled", "labels", "making", "hours_left",
          "gpu_hours", "calls", "tokens", "cost", "plan_gpu_hours", "plan_calls",
          "plan_tokens", "plan_cost"]  # fmt: skip
STAGE_FOLDER = {LABELS: "transitions", CHECKPOINTS: "judge_checkpoints", IMAGE: "judge_image"}
GENERATE_RULES = ("generate", "generate_api")
PAID_RULES = {"generate_api": "video_api", "generate_image_api": "image_api"}  # -> resubmit's


def makes(job: dict) -> bool:
    """Whether `job` makes videos: a generate job, a batch job (counted as one), an API's."""
    return job["rule"] in GENERATE_RULES or job["rule"].startswith(BATCH_RULE)


def stage_target(study: Study, run_key: str, task: str, stage: str) -> Path:
    """The folder the VLM job of `stage` writes for a (run, task): what `--force` redoes."""
    if stage in STAGE_FOLDER:
        return stage_folder(study.outdir, run_key, task, STAGE_FOLDER[stage])
    return judge_folder(study.outdir, run_key, task, stage)


def task_instances(study: Study) -> dict[tuple[str, str], list[str]]:
    """The instances of each (run key, task), in the study's order."""
    found: dict[tuple[str, str], list[str]] = {}
    for run in study.runs.values():
        for instance, task in run.instances.items():
            found.setdefault((run.key, task), []).append(instance)
    return found


def with_resend(rerun: str, branch: str) -> str:
    """`rerun` with the user's word that sends a paid request again (`--config` last)."""
    return rerun + ("" if " --config " in rerun else " --config") + f" '{resend_config(branch)}'"


def errors_of(study: Study, run, task: str, count: Tally, rerun: str) -> list[list]:
    """The errors the documents of a (run, task) record, each with its rerun command."""
    rows = []
    for instance, stage, reason in count.errors:
        if stage == "generate":  # an API's refusal: asked again ({rerun} may end in --config)
            image = run.output == "image"
            made = study.generation(run, instance).with_name("image.png" if image else "video.mp4")
            branch = "image_api" if image else "video_api"
            command = f"snakemake {shlex.quote(str(made))} --force {with_resend(rerun, branch)}"
        else:
            target = shlex.quote(str(stage_target(study, run.key, task, stage)))
            command = f"snakemake {target} --force {rerun}"
        rows.append([run.key, task, instance, stage, reason, command])
    return rows


def task_row(study: Study, run, task: str, count: Tally, jobs: list[dict],
             seconds: float | None, prices: dict, ledger: pd.DataFrame,
             now: float) -> dict:  # fmt: skip
    """The status of a (run, task) from its counts, its `jobs` (running or failed) and
    the run's measured `seconds` per video (None: none made yet, so no time left but NaN
    where videos are left; `now`: time.monotonic())."""
    running = [j for j in jobs if j["state"] == "running"]
    making = [j for j in running if makes(j)]
    waiting = max(0, count.videos - count.made - len(making)) if run.generates else 0
    if not (waiting or making):
        hours = 0.0
    elif seconds is None:  # no video of the model made yet: no basis
        hours = math.nan
    else:
        share = sum(max(0.0, 1 - (now - j["started"]) / seconds) for j in making)
        hours = (waiting + share) * seconds / 3600
    mine = ledger[ledger["task"] == task] if run.kind == API else ledger  # else none
    costs = run_costs(study, run, count, prices, mine)
    return {
        "model": run.key,
        "task": task,
        "videos": count.videos,
        "generated": count.made,
        "judged": count.stage(MAIN)["ok"] + count.stage(IMAGE)["ok"],  # an image model's
        "labelled": count.stage(LABELS)["ok"],
        "failed": count.refused
        + sum(stage in (MAIN, LABELS, IMAGE) for _, stage, _ in count.errors)
        + sum(j["state"] == "failed" for j in jobs),
        "running": len(running),
        "hours_left": hours,
        "gpu_hours": costs[0]["gpu_hours"],
        "calls": sum(row["calls"] for row in costs[1:]),
        "tokens": sum(row["input_tokens"] + row["output_tokens"] for row in costs[1:]),
        "cost": total(row["cost"] for row in costs),
    }


def model_rows(study: Study, table: pd.DataFrame, tallies: dict[str, Tally], jobs: list,
               prices: dict, lanes: dict) -> pd.DataFrame:  # fmt: skip
    """Per run key, then `total`: the progress summed over its tasks, the time left at the
    pace of now (NaN: no basis yet; over its lanes, the most generate jobs seen at once),
    and beside the spend, the plan's estimate for the whole study (spent + `*_left`)."""
    learned = learn(study, tallies)
    plan = {key: plan_row(study, run, tallies, prices, learned) for key, run in study.runs.items()}
    making = [j["wildcards"].get("model") for j in jobs
              if j["state"] == "running" and makes(j)]  # fmt: skip
    rows = []
    for run in [*study.runs.values(), None]:  # None: the whole study
        mine = table if run is None else table[table["model"] == run.key]
        plans = list(plan.values()) if run is None else [plan[run.key]]
        spent = {key: mine[key].sum() for key in ("gpu_hours", "calls", "tokens")}
        spent["cost"] = total(mine["cost"].dropna())
        name = "total" if run is None else run.key
        running = len(making) if run is None else making.count(name)
        left = sum(t.videos - t.made for key, t in tallies.items()
                   if study.runs[key].generates and (run is None or key == name))  # fmt: skip
        rows.append({
            "model": name,
            **{key: mine[key].sum() for key in ("videos", "generated", "judged", "labelled")},
            "labels": any(LABELS in study.stages(r) for r in study.runs.values()
                          if run is None or r is run),
            "making": running,
            "hours_left": mine["hours_left"].sum(skipna=False)
            / max(1, min(max(running, lanes.get(name, 0)), left)),
            **spent,
            "plan_gpu_hours": spent["gpu_hours"] + sum(p["gpu_hours_left"] for p in plans),
            "plan_calls": spent["calls"] + sum(p["calls_left"] for p in plans),
            "plan_tokens": spent["tokens"] + sum(p["tokens_left"] for p in plans),
            "plan_cost": total([spent["cost"], *(p["cost_left"] for p in plans)]),
        })  # fmt: skip
    return pd.DataFrame(rows, columns=MODELS)


def progress(study: Study, counts: dict[tuple[str, str], Tally], jobs: list[dict], rerun: str,
             prices: dict, ledger: pd.DataFrame, lanes: dict | None = None):  # fmt: skip
    """(status table, models table, errors table) from the counts of each (run key, task)
    and `jobs` (this run's running or failed jobs: rule, wildcards, state, started,
    reason, target). `rerun`: what a rerun command puts after its target (cores, config
    files, --config last); `lanes`: by run key and `total`, the most generate jobs seen
    running at once so far."""
    rows, errors, now = [], [], time.monotonic()
    tallies = {key: Tally() for key in study.runs}
    for (key, _), count in counts.items():
        tallies[key] = tallies[key] + count
    seconds = {key: measured_seconds(study, run, tallies) for key, run in study.runs.items()}
    for (key, task), count in counts.items():
        run = study.runs[key]
        mine = [j for j in jobs if j["wildcards"].get("model") == key
                and j["wildcards"].get("task") == task]  # fmt: skip
        rows.append(task_row(study, run, task, count, mine, seconds[key], prices, ledger, now))
        errors += errors_of(study, run, task, count, rerun)
    for job in jobs:
        if job["state"] == "failed":
            wildcards = job["wildcards"]
            where = [wildcards.get(k, "") for k in ("model", "task", "instance")]
            branch = PAID_RULES.get(job["rule"])
            if branch and f"--config '{resend_config(branch)}'" in job["reason"]:
                # a paid request that may have been taken: the job named the user's word
                command = f"snakemake {shlex.quote(job['target'])} {with_resend(rerun, branch)}"
            else:
                command = f"snakemake {shlex.quote(job['target'])} {rerun}"
            errors.append([*where, job["rule"], job["reason"], command])
    table = pd.DataFrame(rows, columns=COLUMNS)
    models = model_rows(study, table, tallies, jobs, prices, lanes or {})
    sums = table[COLUMNS[2:]].sum(min_count=1).to_dict()
    sums["hours_left"] = table["hours_left"].sum(skipna=False)
    table = pd.concat([table, pd.DataFrame([{"model": "total", "task": "", **sums}])],
                      ignore_index=True)  # fmt: skip
    counted = [c for c in COLUMNS[2:] if c not in ("hours_left", "gpu_hours", "cost")]
    table[counted] = table[counted].astype(int)
    for column, digits in (("hours_left", 4), ("gpu_hours", 4), ("cost", 6)):
        table[column] = pd.to_numeric(table[column]).round(digits)
    return table, models, pd.DataFrame(errors, columns=ERRORS)


def main_judge(study: Study, counts: dict[tuple[str, str], Tally]) -> tuple[str, Counter]:
    """The main judge's model and its documents per model version, over every stage that
    calls it (its scores, the labels, the checkpoints, the image judge: not a variant's)."""
    seen = Counter()
    for count in counts.values():
        for stage, found in count.versions.items():
            if stage == MAIN or stage not in study.judges:
                seen += found
    return study.judges[MAIN]["model"], seen


def last_line(paths: list[str]) -> str:
    """The last non-empty line of the first readable log among `paths` (a job's reason)."""
    for path in paths:
        try:
            lines = Path(path).read_text(errors="replace").splitlines()
        except OSError:
            continue
        if text := [line.strip() for line in lines if line.strip()]:
            return redact(text[-1])[:400]
    return "no log; see Snakemake's output"


def ended_line(stamp: str, jobs: list[dict], failed: bool) -> str:
    """The page's line for a run that has ended at `stamp`: finished, or how it failed."""
    count = sum(job["state"] == "failed" for job in jobs)
    if count:
        return f"Run ended {stamp}: {count} job(s) failed (see Errors below)."
    if failed:
        return f"Run ended {stamp} in an error (see Snakemake's output); no job failed."
    return f"Run finished {stamp}: every job done, none failed."


class StatusWriter(logging.Handler):
    """Keeps status.csv, status.html and status_errors.csv of a run up to date from
    Snakemake's job events; `say` prints a line to the terminal (at most every
    `say_every` seconds, and the whole table at the end). `judge_off`: why this run
    judges nothing (the page says so), or None."""

    def __init__(self, study: Study, prices: dict, rerun: str, say: Callable[[str], None],
                 every: float = 5.0, say_every: float = 60.0,
                 judge_off: str | None = None):  # fmt: skip
        super().__init__(logging.INFO)
        # the rerun command repeats this run's --config: an endpoint's credentials go
        self.study, self.prices, self.rerun, self.say = study, prices, redact(rerun), say
        self.every, self.say_every, self.judge_off = every, say_every, judge_off
        self.lanes: dict[str, int] = {}  # the most generate jobs seen at once, by run key
        self.docs = Documents()
        self.instances = task_instances(study)
        self.counts: dict[tuple[str, str], Tally] = {}
        self.dirty = set(self.instances)  # the (run, task)s to count again
        self.ledger = study_ledger(study)
        self.jobs: dict[int, dict] = {}
        self.written = self.said = 0.0
        self.timer: threading.Timer | None = None
        self.guard = threading.Lock()
        self.active = False  # a job other than the plan has run

    def emit(self, record: logging.LogRecord) -> None:
        # self.jobs is replaced, never changed in place: a timer's write reads it meanwhile
        event = getattr(record, "event", None)
        if event == LogEvent.JOB_INFO and record.rule_name != "plan":
            self.active = True
            outputs = [str(path).split(" (")[0] for path in record.output or []]
            target = outputs[0] if outputs else ""
            job = {"rule": record.rule_name, "wildcards": dict(record.wildcards or {})}
            if record.rule_name.startswith(BATCH_RULE):  # no wildcards: its videos' folders
                runs = {tuple(Path(path).parts[-4:-2]) for path in outputs}
                model, task = Path(target).parts[-4:-2]
                job.update(wildcards={"model": model, "task": task}, runs=runs)
            job.update(state="running", target=target, reason="", started=time.monotonic())
            self.jobs = {**self.jobs, record.jobid: job}
        elif event == LogEvent.JOB_FINISHED and record.job_id in self.jobs:
            self.ended(self.jobs[record.job_id])
            self.jobs = {i: job for i, job in self.jobs.items() if i != record.job_id}
        elif event == LogEvent.JOB_ERROR and record.jobid in self.jobs:
            self.ended(self.jobs[record.jobid])
            failed = {"state": "failed", "reason": last_line(list(record.log or []))}
            self.jobs = {**self.jobs, record.jobid: {**self.jobs[record.jobid], **failed}}
        else:
            return
        try:
            self.update()
        except Exception:  # a broken status page is reported, and never stops the run
            self.handleError(record)

    def ended(self, job: dict) -> None:
        """A job ended: its (run, task)'s documents are counted again at the next write."""
        keys = job.get("runs") or {(job["wildcards"].get("model"), job["wildcards"].get("task"))}
        self.dirty = self.dirty | (keys & set(self.instances))

    def update(self) -> None:
        """Write now, or when `every` seconds have passed since the last write."""
        wait = self.written + self.every - time.monotonic()
        if wait <= 0:
            self.write()
        elif self.timer is None:
            self.timer = threading.Timer(wait, self.write)
            self.timer.daemon = True
            self.timer.start()

    def recount(self) -> None:
        """Count the (run, task)s whose jobs ended since the last write (the ledger again
        if one of them is a video API's)."""
        dirty, self.dirty = self.dirty, set()
        for key, task in dirty:
            run = self.study.runs[key]
            self.counts[key, task] = tally(self.study, run, self.instances[key, task], self.docs)
        if any(self.study.runs[key].kind == API for key, _ in dirty):
            self.ledger = study_ledger(self.study)

    def write(self, final: bool = False, failed: bool = False) -> tuple[pd.DataFrame, pd.DataFrame]:
        """Write the status files (and at the end, `final`, tables/costs.csv, every
        document counted again; `failed`: the run ended in an error); returns the status
        and errors tables."""
        with self.guard:
            self.timer = None
            self.written = time.monotonic()
            if final:
                self.dirty = set(self.instances)
            self.recount()
            counts = {key: self.counts[key] for key in self.instances}
            jobs = list(self.jobs.values())
            table, models, errors = progress(self.study, counts, jobs, self.rerun, self.prices,
                                             self.ledger, self.lanes)  # fmt: skip
            self.lanes = {row.model: max(self.lanes.get(row.model, 0), row.making)
                          for row in models.itertuples()}  # fmt: skip
            errors = errors.map(lambda v: redact(v) if isinstance(v, str) else v)
            out = Path(self.study.outdir)
            write_text(out / "status.csv", table.to_csv(index=False))
            write_text(out / "status_errors.csv", errors.to_csv(index=False))
            stamp = time.strftime("%Y-%m-%d %H:%M:%S %Z")
            ended = ended_line(stamp, jobs, failed) if final else None
            shown = page(table, models, errors, stamp, self.prices.get("currency", ""),
                         self.judge_off, ended, main_judge(self.study, counts))  # fmt: skip
            write_text(out / "status.html", shown)
            if final:
                tallies = {key: Tally() for key in self.study.runs}
                for (key, _), count in counts.items():
                    tallies[key] = tallies[key] + count
                costs = cost_rows(self.study, self.prices, tallies, self.ledger)
                write_text(out / "tables" / "costs.csv", costs.to_csv(index=False))
        total_row = table.iloc[-1]
        if final or self.written - self.said >= self.say_every:
            self.said = self.written
            self.say(
                f"Status ({out}/status.html): {int(total_row['generated'])} generated, "
                f"{int(total_row['judged'])} judged, {int(total_row['labelled'])} labelled, "
                f"{int(total_row['failed'])} failed, {int(total_row['running'])} running"
            )
        return table, errors

    def finish(self, failed: bool = False) -> None:
        """At the end of the run (`failed`: in an error): the last status, the page saying
        the run has ended, the errors, tables/costs.csv."""
        if self.timer is not None:
            self.timer.cancel()
        if not self.active:
            return
        self.jobs = {i: j for i, j in self.jobs.items() if j["state"] == "failed"}
        table, errors = self.write(final=True, failed=failed)
        self.say("\n" + table.to_string(index=False))
        for error in errors.itertuples():
            self.say(f"error {error.model} {error.task} {error.instance} ({error.stage}): "
                     f"{error.reason}\n  rerun: {error.rerun}")  # fmt: skip
