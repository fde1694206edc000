"""Scores along the denoising trajectory: the full judge on chosen checkpoint videos.

With `judge.checkpoints` (steps of `denoise.steps`), rule `judge_checkpoints` judges each
chosen checkpoint `denoise/stepNN.mp4` of every generated instance of a (model, task) in
one job, exactly as rule `judge` judges `video.mp4` (same protocol, prompts and cache),
writing per instance

    judge_checkpoints/<instance>/stepNN/{completeness,rubric,score}.json
    judge_checkpoints/<instance>/checkpoint_scores.json
        {"status", "reason"?, "steps": [{"step", **score.json}, ...]}
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from pathlib import Path

from vgi_models.video import checkpoint_name
from workflow_scripts.benchmark.study import Study, StudyError
from workflow_scripts.common.files import write_json
from workflow_scripts.common.logs import job_log
from workflow_scripts.judge.jobs import judge_file, official_prompts, run_vlm, summary


def checkpoint_steps(config: Mapping, study: Study) -> list[int]:
    """`judge.checkpoints`, sorted, each a decoded step; raises `StudyError`."""
    steps = sorted(config["judge"].get("checkpoints") or [])
    if missing := [step for step in steps if step not in study.steps]:
        decoded = list(study.steps)
        raise StudyError([f"judge.checkpoints: step(s) {missing} not in denoise.steps {decoded}"])
    return steps


def step_scores(steps, judged: list[dict]) -> dict:
    """checkpoint_scores.json of one instance: each step's score; `error` if any is."""
    pairs = zip(steps, judged, strict=True)
    scores = [{"step": step, **documents["score"]} for step, documents in pairs]
    errors = [f"step {s['step']}: {s['reason']}" for s in scores if s["status"] != "ok"]
    status = {"status": "error", "reason": "; ".join(errors)} if errors else {"status": "ok"}
    calls = {key: sum(s[key] for s in scores) for key in ("calls", "cached_calls")}
    return {**status, **calls, "steps": scores}


def judge_checkpoints_job(smk) -> None:
    """Rule `judge_checkpoints`: the judge on the chosen checkpoints (`params.steps`) of
    every generated instance of one (model, task) (`input.denoise`: their folders)."""
    judge, instances, steps = json.loads(smk.params.judge), smk.params.instances, smk.params.steps
    official = official_prompts(smk, judge)  # before any call
    folders = [Path(folder) for folder in smk.input.denoise]

    async def judge_all(client) -> list[list[dict]]:
        async def instance(denoise: Path) -> list[dict]:
            videos = [denoise / checkpoint_name(step, "x0") for step in steps]
            entry = instances[denoise.parent.name]
            judged = (judge_file(client, entry, v, judge, official=official) for v in videos)
            return await asyncio.gather(*judged)

        return await asyncio.gather(*map(instance, folders))

    with job_log(smk):
        scores = []
        for denoise, judged in zip(folders, run_vlm(smk, judge_all), strict=True):
            out = Path(smk.output[0]) / denoise.parent.name
            for step, documents in zip(steps, judged, strict=True):
                for name, document in documents.items():
                    write_json(out / f"step{step:02d}" / f"{name}.json", document)
            scores.append(step_scores(steps, judged))
            write_json(out / "checkpoint_scores.json", scores[-1])
        print(summary(scores))
