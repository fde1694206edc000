"""`snakemake plan`: what is left of a study, per run and in total (`<outdir>/plan.csv`).

For each run key: videos made and left; GPU-hours left at the measured seconds per video
of the run's videos already made (`generation.json`), else of the model's other runs,
else the registry's `resources.runtime` (minutes on an H20, bench/runtimes.py); the VLM
calls and tokens left for every stage whose document is missing (`documents.Study.stages`);
their price at `prices`; the disk the run takes once finished.

Calls per video: measured (calls and cache hits per document of that run and stage) where
documents exist, else derived from the judge protocol at the clip's length and rate
(`judge_calls`): completeness 1 call; round 1 one call per window of its frames; round 2
ROUND2_PER_WINDOW windows per round-1 call (an estimate: it follows the judge's
nominations; all at once: one call per nominated interval); the verdict 1 call; a
transition label 1 call per checkpoint pair; judge variants and judged checkpoints repeat
the judge's calls. Tokens per call: measured per
stage over the study's documents, else IMAGE_TOKENS per image sent plus TEXT_TOKENS in and
OUTPUT_TOKENS out per call.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping
from pathlib import Path

import pandas as pd

from workflow_scripts.common.layout import MAIN, run_folder
from workflow_scripts.judge.frames import samples
from workflow_scripts.judge.protocol import windows
from workflow_scripts.judge.settings import Protocol
from workflow_scripts.study.costs import stage_spent
from workflow_scripts.study.documents import (
    CHECKPOINTS,
    LABELS,
    Documents,
    Study,
    generation_seconds,
)
from workflow_scripts.study.sources import token_cost, video_price

COLUMNS = ["model", "videos_done", "videos_left", "gpu_hours_left", "calls_left",
           "tokens_left", "cost_left", "disk_gb"]  # fmt: skip
IMAGE_TOKENS = 258  # Gemini's tokens for an image of up to 384 px a side (more: tiles of 258)
TEXT_TOKENS = 800  # a call's instructions, checklist and frame labels
OUTPUT_TOKENS = 600  # a reply, thinking included
ROUND2_PER_WINDOW = 1.0  # round-2 windows per round-1 window (one nominated moment each)
BITS_PER_PIXEL = 0.15  # an encoded frame's size (H.264 at imageio's default quality)


def judge_calls(frames: int, fps: float, p: Protocol) -> tuple[float, float]:
    """(calls, images sent) of one video's judgement under protocol `p`."""
    first_fps = p.even_fps if p.sampling == "even" else p.round1_fps
    shown = len(samples(frames, fps, p.completeness_fps, rule=p.frames))
    first = len(samples(frames, fps, first_fps, rule=p.frames))
    cut = windows(range(first), p.window, p.overlap)
    first_calls = 1 if p.batching == "all_at_once" else len(cut)
    calls, images = 1 + first_calls + 1, shown + 1 + first + len(cut) * p.overlap + first_calls
    if p.sampling != "even":  # round 2: an interval of 2 x radius around each nominated frame
        interval = round(2 * p.radius * p.round2_fps) + 1
        per = (
            1 if p.batching == "all_at_once" else len(windows(range(interval), p.window, p.overlap))
        )
        second = ROUND2_PER_WINDOW * first_calls * per  # one nominated moment per call
        calls += second
        images += second * (min(interval, p.window) + 1)
    return calls, images


def estimate(study: Study, stage: str, run, clip: tuple[int, float]) -> tuple[float, float]:
    """(calls, images) per video of `stage`, from the protocol."""
    if stage == LABELS:
        return len(study.pairs), len(study.pairs) * (2 * study.frames_per_checkpoint + 1)
    protocol = Protocol(**study.judges[stage if stage in study.judges else MAIN]["protocol"])
    calls, images = judge_calls(*clip, protocol)
    repeat = len(study.checkpoints) if stage == CHECKPOINTS else 1
    return calls * repeat, images * repeat


def clip(run) -> tuple[int, float]:
    """(frames, fps) of the run's videos: the registry's, else read from one of them."""
    if run.frames and run.fps:
        return run.frames, run.fps
    import decord

    reader = decord.VideoReader(str(run.sample_video))
    return len(reader), reader.get_avg_fps()


def folder_bytes(folder: Path) -> int:
    """Bytes of the files in `folder` and its subfolders (0 if there is none)."""
    if not folder.is_dir():
        return 0
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def seconds_per_video(study: Study, run, docs: Documents) -> float:
    """Measured seconds per video of the run, else of the model's runs, else the registry's."""
    for runs in ([run], [r for r in study.runs.values() if r.model == run.model]):
        measured = [
            generation_seconds(meta)
            for r in runs
            for instance in r.instances
            if (meta := docs.read(study.generation(r, instance)))
        ]
        if measured:
            return statistics.fmean(measured)
    return 60.0 * (run.runtime_min or 60)


def per_call(study: Study, docs: Documents) -> dict:
    """Measured (input, output) tokens per call of each stage over the study's documents."""
    measured = {}
    for stage in {stage for run in study.runs.values() for stage in study.stages(run)}:
        runs = [run for run in study.runs.values() if stage in study.stages(run)]
        used = [stage_spent(study, stage, run, docs) for run in runs]
        if calls := sum(u["calls"] + u["cached_calls"] for u in used):
            keys = ("input_tokens", "output_tokens")
            measured[stage] = tuple(sum(u[key] for u in used) / calls for key in keys)
    return measured


def plan_row(study: Study, run, prices: Mapping, docs: Documents, measured: dict) -> dict:
    """The plan of one run key (`measured`: tokens per call by stage, `per_call`)."""
    made = [
        instance
        for instance in run.instances
        if not run.generates or docs.read(study.generation(run, instance)) is not None
    ]  # videos made elsewhere: nothing to make
    done, left = len(made), len(run.instances) - len(made)
    hours = seconds_per_video(study, run, docs) / 3600 if run.denoises else 0.0
    price = video_price(run, hours, prices)
    costs = [None if price is None else price * left]
    calls = tokens = 0.0
    for stage in study.stages(run):
        used = stage_spent(study, stage, run, docs)
        if not (missing := len(run.instances) - used["n"]):
            continue
        per_video, images = estimate(study, stage, run, clip(run))
        if used["n"]:  # measured: the run's judgements so far
            per_video = (used["calls"] + used["cached_calls"]) / used["n"]
        if stage in measured:
            tokens_in, tokens_out = (missing * per_video * n for n in measured[stage])
        else:
            tokens_in = missing * (images * IMAGE_TOKENS + per_video * TEXT_TOKENS)
            tokens_out = missing * per_video * OUTPUT_TOKENS
        calls += missing * per_video
        tokens += tokens_in + tokens_out
        costs.append(token_cost(study.vlm_model(stage), tokens_in, tokens_out, prices))
    priced = [cost for cost in costs if cost is not None]
    return {
        "model": run.key,
        "videos_done": done,
        "videos_left": left,
        "gpu_hours_left": left * hours,
        "calls_left": calls,
        "tokens_left": tokens,
        "cost_left": sum(priced) if priced else None,
        "disk_gb": disk_bytes(study, run, made) / 1e9,
    }


def disk_bytes(study: Study, run, made: list) -> float:
    """The run's folders once finished (video, checkpoint videos, documents): measured over
    the videos made, else from the clip's pixels at BITS_PER_PIXEL; videos made elsewhere:
    the size of one of them, for each."""
    if not run.generates:
        return len(run.instances) * Path(run.sample_video).stat().st_size
    sizes = [folder_bytes(run_folder(study.outdir, run.key, run.instances[i], i)) for i in made]
    if sizes:
        return sum(sizes) + (len(run.instances) - len(sizes)) * statistics.fmean(sizes)
    frames, _ = clip(run)
    videos = 1 + (len(study.steps) * (2 if study.decode == "both" else 1) if run.denoises else 0)
    pixels = frames * (run.width or 1280) * (run.height or 720)
    return len(run.instances) * videos * pixels * BITS_PER_PIXEL / 8


def plan_table(study: Study, prices: Mapping, docs: Documents | None = None) -> pd.DataFrame:
    """The plan: a row per run key, then `total`."""
    docs = docs or Documents()
    measured = per_call(study, docs)
    rows = [plan_row(study, run, prices, docs, measured) for run in study.runs.values()]
    rows = pd.DataFrame(rows, columns=COLUMNS)
    total = rows.drop(columns="model").sum(min_count=1)
    rows = pd.concat([rows, pd.DataFrame([{"model": "total", **total}])], ignore_index=True)
    for column in ("videos_done", "videos_left"):
        rows[column] = rows[column].astype(int)
    rows["calls_left"] = rows["calls_left"].map(math.ceil)
    rows["tokens_left"] = rows["tokens_left"].map(round)
    for column, digits in (("gpu_hours_left", 4), ("cost_left", 2), ("disk_gb", 3)):
        rows[column] = pd.to_numeric(rows[column]).round(digits)
    return rows


def plan_job(smk) -> None:
    """Rule `plan`: write `<outdir>/plan.csv`, print it (and into the job's log)."""
    study = Study.from_dict(smk.params.study)
    table = plan_table(study, smk.params.prices)
    path = Path(study.outdir) / "plan.csv"
    path.parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(path, index=False)
    currency = smk.params.prices.get("currency", "")
    text = (
        f"\nThe study's plan ({path}; cost_left in {currency}, empty: not priced):\n\n"
        + table.to_string(index=False, na_rep="")
        + "\n"
    )
    print(text, flush=True)
    Path(smk.log[0]).parent.mkdir(parents=True, exist_ok=True)
    Path(smk.log[0]).write_text(text, encoding="utf-8")
