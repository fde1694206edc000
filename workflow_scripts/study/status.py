"""A run's progress while it goes: `<outdir>/status.csv`, `status.html`, the terminal.

`StatusWriter` is a `logging.Handler` on Snakemake's logger in the main process: it gets
the run events a logger plugin gets (JOB_INFO when a job starts or is submitted,
JOB_FINISHED, JOB_ERROR with the job's log files), also for jobs on other SLURM nodes,
whose events the main process reports. After each event (at most every `every` seconds,
a timer catching the last) it writes, per (model, task), counted from the documents on
disk: videos generated, judged (main judge, `ok`), labelled (`ok`), failed (documents in
`error` and jobs of this run that failed) and jobs running now, with the GPU-hours and
VLM calls spent so far; and the errors, each with its reason and the command that reruns
it. The page is static HTML (it reloads itself every 30 s) showing the same table.
"""

from __future__ import annotations

import html
import logging
import shlex
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pandas as pd
from snakemake_interface_logger_plugins.common import LogEvent

from workflow_scripts.common.files import write_text
from workflow_scripts.common.layout import MAIN, judge_folder, stage_folder
from workflow_scripts.study.costs import write_costs
from workflow_scripts.study.documents import (
    CHECKPOINTS,
    LABELS,
    Documents,
    Study,
    generation_seconds,
    spent,
)

COLUMNS = ["model", "task", "generated", "judged", "labelled", "failed", "running",
           "gpu_hours", "calls"]  # fmt: skip
ERRORS = ["model", "task", "instance", "stage", "reason", "rerun"]
STAGE_FOLDER = {LABELS: "transitions", CHECKPOINTS: "judge_checkpoints"}


def stage_target(study: Study, run_key: str, task: str, stage: str) -> Path:
    """The folder the VLM job of `stage` writes for a (run, task): what `--force` redoes."""
    if stage in STAGE_FOLDER:
        return stage_folder(study.outdir, run_key, task, STAGE_FOLDER[stage])
    return judge_folder(study.outdir, run_key, task, stage)


def progress(study: Study, docs: Documents, jobs: list[dict], rerun: str):
    """(status table, errors table): the documents' counts per (run, task) and `jobs`
    (this run's running or failed jobs: rule, wildcards, state, reason, target). `rerun`:
    what a rerun command puts after its target (cores, config files, --config last)."""
    rows, errors = [], []
    for run in study.runs.values():
        by_task: dict[str, list[str]] = {}
        for instance, task in run.instances.items():
            by_task.setdefault(task, []).append(instance)
        stages = study.stages(run)
        for task, instances in by_task.items():
            row = dict.fromkeys(COLUMNS[2:], 0)
            seconds = 0.0
            for instance in instances:
                made = docs.read(study.generation(run, instance))
                row["generated"] += made is not None
                seconds += generation_seconds(made) if run.denoises and made else 0.0
                if isinstance(made, dict) and made.get("status") == "error":  # an API's refusal
                    row["failed"] += 1
                    video = study.generation(run, instance).with_name("video.mp4")
                    # `rerun` ends with its --config list, if it has one: join it
                    resubmit = ("" if " --config " in rerun else " --config") + (
                        " 'video_api={resubmit: true}'"
                    )
                    errors.append([run.key, task, instance, "generate", made.get("reason", ""),
                                   f"snakemake {shlex.quote(str(video))} --force {rerun}"
                                   f"{resubmit}"])  # fmt: skip
                    continue  # its judge's error only repeats it
                for stage in stages:
                    document = docs.read(study.document(stage, run, instance))
                    if not document:
                        continue
                    row["calls"] += spent(document)["calls"]
                    ok = document.get("status") == "ok"
                    row["judged"] += ok and stage == MAIN
                    row["labelled"] += ok and stage == LABELS
                    if not ok and stage in (MAIN, LABELS):
                        row["failed"] += 1
                    if not ok:
                        target = shlex.quote(str(stage_target(study, run.key, task, stage)))
                        reason = document.get("reason", "")
                        errors.append([run.key, task, instance, stage, reason,
                                       f"snakemake {target} --force {rerun}"])  # fmt: skip
            mine = [j for j in jobs if j["wildcards"].get("model") == run.key
                    and j["wildcards"].get("task") == task]  # fmt: skip
            row["running"] = sum(j["state"] == "running" for j in mine)
            row["failed"] += sum(j["state"] == "failed" for j in mine)
            row["gpu_hours"] = round(seconds / 3600, 4)
            rows.append({"model": run.key, "task": task, **row})
    for job in jobs:
        if job["state"] == "failed":
            wildcards = job["wildcards"]
            where = [wildcards.get(k, "") for k in ("model", "task", "instance")]
            command = f"snakemake {shlex.quote(job['target'])} {rerun}"
            errors.append([*where, job["rule"], job["reason"], command])
    table = pd.DataFrame(rows, columns=COLUMNS)
    total = {"model": "total", "task": "", **table[COLUMNS[2:]].sum().to_dict()}
    table = pd.concat([table, pd.DataFrame([total])], ignore_index=True)
    counts = [column for column in COLUMNS[2:] if column != "gpu_hours"]
    table[counts] = table[counts].astype(int)
    return table, pd.DataFrame(errors, columns=ERRORS)


def page(table: pd.DataFrame, errors: pd.DataFrame, written: str) -> str:
    """status.html: the status table, then the errors."""
    total = table.iloc[-1]
    lines = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta http-equiv="refresh" content="30">',
        "<title>Study status</title>",
        "<style>body{font-family:sans-serif;margin:1.5em}table{border-collapse:collapse}"
        "td,th{border:1px solid #bbb;padding:.25em .6em;text-align:right}"
        "td:nth-child(-n+2),#errors td,#errors th{text-align:left}tr:last-child{font-weight:bold}"
        "#errors tr:last-child{font-weight:normal}code{font-size:90%}</style></head><body>",
        "<h1>Study status</h1>",
        f"<p>Written {html.escape(written)}; reloads every 30 s. Running now: "
        f"{int(total['running'])} job(s). Spent so far: {total['gpu_hours']:.3f} GPU-hours, "
        f"{int(total['calls'])} VLM calls.</p>",
        table.to_html(index=False, table_id="status", border=0),
        f"<h2>Errors ({len(errors)})</h2>",
    ]
    if len(errors):
        shown = errors.assign(rerun=[f"<code>{html.escape(c)}</code>" for c in errors["rerun"]])
        shown["reason"] = shown["reason"].map(html.escape)
        lines.append(shown.to_html(index=False, table_id="errors", border=0, escape=False))
    else:
        lines.append("<p>None.</p>")
    return "\n".join([*lines, "</body></html>\n"])


def last_line(paths: list[str]) -> str:
    """The last non-empty line of the first readable log among `paths` (a job's reason)."""
    for path in paths:
        try:
            lines = Path(path).read_text(errors="replace").splitlines()
        except OSError:
            continue
        if text := [line.strip() for line in lines if line.strip()]:
            return text[-1][:400]
    return "no log; see Snakemake's output"


class StatusWriter(logging.Handler):
    """Keeps status.csv, status.html and status_errors.csv of a run up to date from
    Snakemake's job events; `say` prints a line to the terminal (at most every
    `say_every` seconds, and the whole table at the end)."""

    def __init__(self, study: Study, prices: dict, rerun: str, say: Callable[[str], None],
                 every: float = 5.0, say_every: float = 60.0):  # fmt: skip
        super().__init__(logging.INFO)
        self.study, self.prices, self.rerun, self.say = study, prices, rerun, say
        self.every, self.say_every = every, say_every
        self.docs = Documents()
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
            target = str(record.output[0]).split(" (")[0] if record.output else ""
            job = {"rule": record.rule_name, "wildcards": dict(record.wildcards or {})}
            job.update(state="running", target=target, reason="")
            self.jobs = {**self.jobs, record.jobid: job}
        elif event == LogEvent.JOB_FINISHED and record.job_id in self.jobs:
            self.jobs = {i: job for i, job in self.jobs.items() if i != record.job_id}
        elif event == LogEvent.JOB_ERROR and record.jobid in self.jobs:
            failed = {"state": "failed", "reason": last_line(list(record.log or []))}
            self.jobs = {**self.jobs, record.jobid: {**self.jobs[record.jobid], **failed}}
        else:
            return
        try:
            self.update()
        except Exception:  # a broken status page is reported, and never stops the run
            self.handleError(record)

    def update(self) -> None:
        """Write now, or when `every` seconds have passed since the last write."""
        wait = self.written + self.every - time.monotonic()
        if wait <= 0:
            self.write()
        elif self.timer is None:
            self.timer = threading.Timer(wait, self.write)
            self.timer.daemon = True
            self.timer.start()

    def write(self, final: bool = False) -> tuple[pd.DataFrame, pd.DataFrame]:
        """Write the status files (and at the end, `final`, tables/costs.csv); returns the
        status and errors tables."""
        with self.guard:
            self.timer = None
            self.written = time.monotonic()
            table, errors = progress(self.study, self.docs, list(self.jobs.values()), self.rerun)
            out = Path(self.study.outdir)
            write_text(out / "status.csv", table.to_csv(index=False))
            write_text(out / "status_errors.csv", errors.to_csv(index=False))
            stamp = time.strftime("%Y-%m-%d %H:%M:%S %Z")
            write_text(out / "status.html", page(table, errors, stamp))
            if final:
                write_costs(self.study, self.prices, self.docs)
        total = table.iloc[-1]
        if final or self.written - self.said >= self.say_every:
            self.said = self.written
            self.say(
                f"Status ({out}/status.html): {int(total['generated'])} generated, "
                f"{int(total['judged'])} judged, {int(total['labelled'])} labelled, "
                f"{int(total['failed'])} failed, {int(total['running'])} running"
            )
        return table, errors

    def finish(self) -> None:
        """At the end of the run: the last status, the errors, tables/costs.csv."""
        if self.timer is not None:
            self.timer.cancel()
        if not self.active:
            return
        self.jobs = {i: j for i, j in self.jobs.items() if j["state"] == "failed"}
        table, errors = self.write(final=True)
        self.say("\n" + table.to_string(index=False))
        for error in errors.itertuples():
            self.say(f"error {error.model} {error.task} {error.instance} ({error.stage}): "
                     f"{error.reason}\n  rerun: {error.rerun}")  # fmt: skip
