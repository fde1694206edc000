"""`snakemake plan`: what is left of a study, per run and in total (`<outdir>/plan.csv`).

For each run key: videos made and left; GPU-hours left at the measured seconds per video
of the run's videos already made (`generation.json`; the weights' load shared by a batch's
videos), else of the model's other runs, else the registry's `resources.runtime` (minutes
on an H20, bench/runtimes.py; with `runtime.compile`, the allowance for its warm-up on top,
`runtime.COMPILE_WARMUP_MIN`); the VLM calls and tokens left for every stage whose document
is missing (`documents.Study.stages`);
their price at `prices` (what it does not price is named below the table); the disk the
run takes once finished.

Calls per video: measured (calls and cache hits per document of that run and stage) where
documents exist, else derived from the judge protocol at the clip's length and rate
(`judge_calls`): completeness 1 call; round 1 one call per window of its frames; round 2
a number of windows per round-1 call, which follows the judge's nominations: the rate the
judge's documents so far show (`round2_rates`), else all judges', else ROUND2_PER_WINDOW
(all at once: one call per nominated interval); the verdict 1 call; a transition label 1
call per checkpoint pair; judge variants and judged checkpoints repeat the judge's calls;
an image model's image: 1 call of at most IMAGES_PER_IMAGE_CALL images. Tokens per call:
measured per stage over the study's documents, else IMAGE_TOKENS per image sent plus
TEXT_TOKENS in and OUTPUT_TOKENS out per call.

Everything is computed from the runs' counts (`tally.Tally`), so the status page computes
the same plan from the counts it keeps.
"""

from __future__ import annotations

import functools
import math
import statistics
from collections import Counter
from collections.abc import Mapping
from pathlib import Path

import pandas as pd

from vgi_models.registry import API
from workflow_scripts.common.files import write_text
from workflow_scripts.common.layout import MAIN, run_folder
from workflow_scripts.judge.frames import samples
from workflow_scripts.judge.protocol import windows
from workflow_scripts.judge.settings import Protocol
from workflow_scripts.study.documents import CHECKPOINTS, IMAGE, LABELS, Documents, Study
from workflow_scripts.study.prices import token_cost, total, unpriced, video_price
from workflow_scripts.study.tally import Tally, run_tallies

COLUMNS = ["model", "videos_done", "videos_left", "gpu_hours_left", "calls_left",
           "tokens_left", "cost_left", "disk_gb"]  # fmt: skip
IMAGE_TOKENS = 258  # Gemini's tokens for an image of up to 384 px a side (more: tiles of 258)
TEXT_TOKENS = 800  # a call's instructions, checklist and frame labels
OUTPUT_TOKENS = 600  # a reply, thinking included
ROUND2_PER_WINDOW = 1.0  # round-2 windows per round-1 window (one nominated moment each)
ANY_JUDGE = ""  # round2_rates' key of every judge's documents together
BITS_PER_PIXEL = 0.15  # an encoded frame's size (H.264 at imageio's default quality)
PNG_BITS_PER_PIXEL = 12.0  # a made image's PNG: an assumption (RGB that PNG halves) until
# the run's first images are measured
# Copies of a paid reply kept outside the outputs, so that no rerun pays again: an API video's
# bytes beside its operation state; an API image's reply and its PNG beside its attempt record.
KEPT_COPIES = {"video": 1, "image": 2}
IMAGES_PER_IMAGE_CALL = 3  # the image judge's: input, reference (where there is one), generated


def judge_calls(frames: int, fps: float, p: Protocol,
                round2: float = ROUND2_PER_WINDOW) -> tuple[float, float]:  # fmt: skip
    """(calls, images sent) of one video's judgement under protocol `p`, with `round2`
    round-2 windows per round-1 call."""
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
        second = round2 * first_calls * per  # `round2` nominated moments per call
        calls += second
        images += second * (min(interval, p.window) + 1)
    return calls, images


def judge_of(study: Study, stage: str) -> str:
    """The judge whose protocol a VLM stage follows (checkpoints: the main judge's)."""
    return stage if stage in study.judges else MAIN


def estimate(study: Study, stage: str, run, rates: Mapping | None = None) -> tuple[float, float]:
    """(calls, images) per video (an image model's: per image) of `stage` of `run`, from the
    protocol (`rates`: round-2 windows per round-1 call by judge, `round2_rates`: the
    stage's judge's, else all judges', else ROUND2_PER_WINDOW)."""
    if stage == IMAGE:
        return 1, IMAGES_PER_IMAGE_CALL
    if stage == LABELS:
        return len(study.pairs), len(study.pairs) * (2 * study.frames_per_checkpoint + 1)
    judge = judge_of(study, stage)
    protocol = Protocol(**study.judges[judge]["protocol"])
    rates = rates or {}
    calls, images = judge_calls(
        *clip(run), protocol, rates.get(judge, rates.get(ANY_JUDGE, ROUND2_PER_WINDOW))
    )
    repeat = len(study.checkpoints) if stage == CHECKPOINTS else 1
    return calls * repeat, images * repeat


@functools.cache
def video_clip(path: str) -> tuple[int, float]:
    """(frames, fps) of a video (read once per process)."""
    import decord

    reader = decord.VideoReader(path)
    return len(reader), reader.get_avg_fps()


def clip(run) -> tuple[int, float]:
    """(frames, fps) of the run's videos: the registry's, else read from one of them."""
    if run.frames and run.fps:
        return run.frames, run.fps
    return video_clip(str(run.sample))


def folder_bytes(folder: Path) -> int:
    """Bytes of the files in `folder` and its subfolders (0 if there is none)."""
    if not folder.is_dir():
        return 0
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def measured_seconds(study: Study, run, tallies: Mapping[str, Tally]) -> float | None:
    """Mean measured seconds per video of the run, else of the model's runs, its weights'
    load counted once per batch (`resources.batch` videos a job); None before any of them
    is made."""
    for runs in ([run], [r for r in study.runs.values() if r.model == run.model]):
        measured = [tallies[r.key] for r in runs]
        if count := sum(t.measured for t in measured):
            return sum(t.job_seconds(run.batch) for t in measured) / count
    return None


def seconds_per_video(study: Study, run, tallies: Mapping[str, Tally]) -> float:
    """Measured seconds per video (`measured_seconds`), else the registry's runtime."""
    measured = measured_seconds(study, run, tallies)
    return 60.0 * (run.runtime_min or 60) if measured is None else measured


def per_call(study: Study, tallies: Mapping[str, Tally]) -> dict:
    """Measured (input, output) tokens per call of each stage over the study's documents."""
    used: dict = {}
    for run in study.runs.values():
        for stage in study.stages(run):
            used[stage] = used.get(stage, Counter()) + tallies[run.key].stage(stage)
    return {
        stage: (u["input_tokens"] / calls, u["output_tokens"] / calls)
        for stage, u in used.items()
        if (calls := u["calls"] + u["cached_calls"])
    }


def round2_rates(study: Study, tallies: Mapping[str, Tally]) -> dict:
    """Round-2 windows per round-1 call of each judge (checkpoints: the main judge's), as
    its documents so far show: their calls (cache hits and retries included) less the
    protocol's fixed calls, over the protocol's calls per unit of rate. A judge without
    judged videos (or with `sampling: even`) is left out; ANY_JUDGE: all judges' together."""
    spare: Counter = Counter()
    units: Counter = Counter()
    for run in study.runs.values():
        for stage in study.stages(run):
            used = tallies[run.key].stage(stage)
            if stage in (LABELS, IMAGE) or not used["paid"]:
                continue
            judge = judge_of(study, stage)
            fixed, _ = estimate(study, stage, run, {judge: 0.0})
            unit = estimate(study, stage, run, {judge: 1.0})[0] - fixed
            spare[judge] += used["calls"] + used["cached_calls"] - used["paid"] * fixed
            units[judge] += used["paid"] * unit
    spare[ANY_JUDGE], units[ANY_JUDGE] = sum(spare.values()), sum(units.values())
    return {judge: max(0.0, spare[judge] / units[judge]) for judge in units if units[judge]}


def plan_row(study: Study, run, tallies: Mapping[str, Tally], prices: Mapping,
             learned: tuple[dict, dict]) -> dict:  # fmt: skip
    """The plan of one run key, but its disk (`learned`: tokens per call by stage,
    `per_call`, and round-2 rates by judge, `round2_rates`)."""
    measured, rates = learned
    count = tallies[run.key]
    done = count.made if run.generates else count.videos  # made elsewhere: nothing to make
    left = count.videos - done
    hours = seconds_per_video(study, run, tallies) / 3600 if run.on_gpu else 0.0
    price = video_price(run, hours, prices)
    costs = [None if price is None else price * left]
    calls = tokens = 0.0
    for stage in study.stages(run):
        used = count.stage(stage)
        if not (missing := count.videos - used["n"]):
            continue
        per_video, images = estimate(study, stage, run, rates)
        if used["paid"]:  # measured: the run's judgements so far
            per_video = (used["calls"] + used["cached_calls"]) / used["paid"]
        if stage in measured:
            tokens_in, tokens_out = (missing * per_video * n for n in measured[stage])
        else:
            tokens_in = missing * (images * IMAGE_TOKENS + per_video * TEXT_TOKENS)
            tokens_out = missing * per_video * OUTPUT_TOKENS
        calls += missing * per_video
        tokens += tokens_in + tokens_out
        costs.append(token_cost(study.vlm_model(stage), tokens_in, tokens_out, prices))
    return {
        "model": run.key,
        "videos_done": done,
        "videos_left": left,
        "gpu_hours_left": left * hours,
        "calls_left": calls,
        "tokens_left": tokens,
        "cost_left": total(costs),
    }


def learn(study: Study, tallies: Mapping[str, Tally]) -> tuple[dict, dict]:
    """What the documents so far teach the plan: tokens per call, round-2 rates."""
    return per_call(study, tallies), round2_rates(study, tallies)


def disk_bytes(study: Study, run, made: list) -> float:
    """The run's folders once finished (video, checkpoint videos, documents): measured over
    the videos (images) made, else from the clip's pixels at BITS_PER_PIXEL (an image's at
    PNG_BITS_PER_PIXEL); videos or images made elsewhere: the size of one of them, for each.
    A paid reply is also kept outside the outputs (KEPT_COPIES)."""
    if not run.generates:
        return len(run.instances) * Path(run.sample).stat().st_size
    copies = 1 + (KEPT_COPIES[run.output] if run.kind == API else 0)
    sizes = [folder_bytes(run_folder(study.outdir, run.key, run.instances[i], i)) for i in made]
    if sizes:
        made_bytes = sum(sizes) + (len(run.instances) - len(sizes)) * statistics.fmean(sizes)
        return copies * made_bytes
    frames, _ = clip(run)
    videos = 1 + (len(study.steps) * (2 if study.decode == "both" else 1) if run.denoises else 0)
    pixels = frames * (run.width or 1280) * (run.height or 720)
    bits = PNG_BITS_PER_PIXEL if run.output == "image" else BITS_PER_PIXEL
    return copies * len(run.instances) * videos * pixels * bits / 8


def plan_table(study: Study, prices: Mapping, docs: Documents | None = None) -> pd.DataFrame:
    """The plan: a row per run key, then `total`."""
    docs = docs or Documents()
    tallies = run_tallies(study, docs)
    learned = learn(study, tallies)
    rows = []
    for run in study.runs.values():
        made = [i for i in run.instances if docs.read(study.generation(run, i)) is not None]
        disk = disk_bytes(study, run, made) / 1e9
        rows.append({**plan_row(study, run, tallies, prices, learned), "disk_gb": disk})
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
    write_text(path, table.to_csv(index=False))
    currency = smk.params.prices.get("currency", "")
    text = (
        f"\nThe study's plan ({path}; cost_left in {currency}, empty: not priced):\n\n"
        + table.to_string(index=False, na_rep="")
        + "\n"
    )
    if missing := unpriced(study, smk.params.prices):
        text += "\ncost_left and its total leave out:\n" + "".join(f"  {m}\n" for m in missing)
    print(text, flush=True)
    Path(smk.log[0]).parent.mkdir(parents=True, exist_ok=True)
    Path(smk.log[0]).write_text(text, encoding="utf-8")
