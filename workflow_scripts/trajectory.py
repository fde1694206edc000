"""Scores along the denoising trajectory: the full judge on chosen checkpoint videos.

With `judge.checkpoints` (steps of `denoise.steps`), rule `judge_checkpoints` judges each
chosen checkpoint `denoise/stepNN.mp4` of a (model, instance) in one job, exactly as rule
`judge` judges `video.mp4` (same protocol, prompts and cache), writing

    judge_checkpoints/stepNN/{completeness,rubric,score}.json
    checkpoint_scores.json   {"status", "reason"?, "steps": [{"step", **score.json}, ...]}

`trajectory_scores.csv` then averages completeness, rubric and final per model and step,
the final video last (step `final`), every step of a model over the same instances.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import pandas as pd

from vgi_models.video import checkpoint_name
from workflow_scripts.files import write_json
from workflow_scripts.jobs import run_vlm_calls, shell_job, unreadable_video
from workflow_scripts.study import Study, StudyError

VALUES = ("completeness", "rubric", "final")


def checkpoint_steps(config: Mapping, study: Study) -> list[int]:
    """`judge.checkpoints`, sorted, each a decoded step; raises `StudyError`."""
    steps = sorted(config["judge"].get("checkpoints") or [])
    if missing := [step for step in steps if step not in study.steps]:
        decoded = list(study.steps)
        raise StudyError([f"judge.checkpoints: step(s) {missing} not in denoise.steps {decoded}"])
    return steps


async def judge_steps(client, instance: Mapping, denoise: Path, steps: Sequence[int], judge):
    """The judge's documents of each step's checkpoint video, judged together."""
    import decord

    from workflow_scripts.judge.frames import video_duration
    from workflow_scripts.judge.protocol import judge_video
    from workflow_scripts.judge.settings import Protocol

    protocol = Protocol(**judge["protocol"])

    async def one(step: int) -> dict:
        video = denoise / checkpoint_name(step, "x0")
        try:
            await asyncio.to_thread(video_duration, video)
        except (RuntimeError, decord.DECORDError, ZeroDivisionError) as error:
            return unreadable_video(str(video), error)
        return await judge_video(client, instance, video, protocol, judge["prompts"])

    return await asyncio.gather(*(one(step) for step in steps))


def judge_checkpoints_job(argv: list[str]) -> None:
    """Rule `judge_checkpoints`: the judge on one (model, instance)'s chosen checkpoints.

    A checkpoint whose judgement is an `error` makes checkpoint_scores.json `error` (the
    job succeeds); a failure of the service fails the job, writing nothing.
    """
    names = ["denoise", "steps", "image", "judge", "instance", "client", "cache"]
    job = shell_job(argv, [*names, "passes", "scores"], optional=["gt"])
    from workflow_scripts.judge.client import VLMClient

    instance = json.loads(job.instance)
    instance.update(image=job.image, gt_image=job.gt or None)
    steps = json.loads(job.steps)

    async def judge() -> list[dict]:
        async with VLMClient.from_config(json.loads(job.client), job.cache) as client:
            return await judge_steps(
                client, instance, Path(job.denoise), steps, json.loads(job.judge)
            )

    judged = run_vlm_calls(judge)
    scores = []
    for step, documents in zip(steps, judged, strict=True):
        for name, document in documents.items():
            write_json(Path(job.passes) / f"step{step:02d}" / f"{name}.json", document)
        scores.append({"step": step, **documents["score"]})
    errors = [f"step {s['step']}: {s['reason']}" for s in scores if s["status"] != "ok"]
    status = {"status": "error", "reason": "; ".join(errors)} if errors else {"status": "ok"}
    write_json(job.scores, {**status, "steps": scores})
    print(json.dumps({**status, "calls": sum(s["calls"] for s in scores)}))


def trajectory_rows(paths: Iterable[str | Path]) -> pd.DataFrame:
    """From `<model>/<task>/<instance>/checkpoint_scores.json` files and the score.json
    beside each: model, instance, step (the video's: `final`), status and VALUES."""
    rows = []
    for path in map(Path, paths):
        model, _, instance = path.parts[-4:-1]
        steps = json.loads(path.read_text(encoding="utf-8"))["steps"]
        final = json.loads((path.parent / "score.json").read_text(encoding="utf-8"))
        for score in [*steps, {**final, "step": "final"}]:
            values = {key: score.get(key) for key in ("step", "status", *VALUES)}
            rows.append({"model": model, "instance": instance, **values})
    return pd.DataFrame(rows, columns=["model", "instance", "step", "status", *VALUES])


def trajectory_table(rows: pd.DataFrame, seed: int = 0, resamples: int = 1000) -> pd.DataFrame:
    """Per model and step (in step order, `final` last): each value's mean with its
    bootstrap 95% CI and `n`, over the instances `ok` at every step of that model."""
    from workflow_scripts.aggregate.tables import bootstrap

    ok = rows.groupby(["model", "instance"])["status"].transform(lambda s: (s == "ok").all())
    kept = rows[ok]
    order = sorted(set(kept["step"]), key=lambda step: (step == "final", str(step).zfill(9)))
    columns = ["model", "step", *(f"{v}{s}" for v in VALUES for s in ("", "_ci_low", "_ci_high"))]
    table = []
    for model in dict.fromkeys(rows["model"]):
        for step in order:
            cell = kept[(kept["model"] == model) & (kept["step"] == step)]
            row = {"model": model, "step": step, "n": len(cell)}
            stats = zip(VALUES, *bootstrap(cell[list(VALUES)], seed, resamples), strict=True)
            for value, mean, low, high in stats:
                row |= {value: mean, f"{value}_ci_low": low, f"{value}_ci_high": high}
            table.append(row)
    return pd.DataFrame(table, columns=[*columns, "n"])


def trajectory_scores_job(smk) -> None:
    """Rule `trajectory_scores`: the table and its plot."""
    from workflow_scripts.aggregate.plots import trajectory_lines
    from workflow_scripts.jobs import job_log

    with job_log(smk):
        table = trajectory_table(trajectory_rows(smk.input.checkpoints))
        table.to_csv(smk.output.table, index=False)
        trajectory_lines(table, smk.output.plot)
        print(table.to_string(index=False))
