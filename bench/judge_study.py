"""The judge stage at study scale: the workflow's `judge_all` and `transitions_all` against
FakeVLM with real-looking reply times and a rate limit the double enforces (429 beyond R
requests in any 60 s, with a retry hint, as the real APIs do).

The benchmark is made here in the release's shape: enough tasks of the taxonomy for
`--videos`, `--per-level` (10) instances per level at 1280x720, of which the paper's half
subset takes 15 per task, so a (model, task) job judges 15 videos as on the real release.
Videos are pre-made, not generated: for each (model, instance) a unique 5 s clip (81 frames
at 16 fps, 1280x720: `--height`) and its denoising checkpoints are written where `generate`
puts them, and `snakemake --touch generate_all` marks them up to date. The frames the VLM
jobs send are then made by rule `prepare_frames`, as the cluster's CPU nodes make them under
the SLURM profile (its CPU seconds per video are reported apart), so the measured run holds
only the VLM jobs, on the submit host. The judge nominates two frames in round 1, so a video
costs 7 judge calls (completeness, 3 round-1 windows, 2 round-2 windows, the verdict) and
one transition call per checkpoint pair.

`--delay` is the reply time: seconds, or `lognormal:MEDIAN:SIGMA` (seeded draws; the
ideal uses their mean, MEDIAN x exp(SIGMA^2 / 2)).

Figures: calls per second over the span from the first request to the last reply (and
over Snakemake's whole wall time) against the quota R / 60 and against the ideal
min(R / 60, in-flight cap / mean reply time), the cap being `judge_api` jobs x
`judge.max_concurrency` calls (the SLURM profile's `judge_api`, the config's
`max_concurrency`); calls in flight over time; 429s; CPU seconds per video of the
VLM jobs on the submit host (and of `prepare_frames`, off it); and the per-job overhead
(seconds per job of a rerun whose calls all come from the cache, one job at a time, over a
dry run of the same).

    python bench/judge_study.py [--videos 120] [--delay lognormal:6:0.5] [--rpm 600]
                                [--per-level 10] [--height 720] [--smoke]

`--smoke` (CI): one task of 2 instances per level (the half subset: 3 videos, the fewest: one
per level), clips at 320x180 (`--height 180`), 0.05 s replies and 6000 requests a minute, so
that the run is not waiting on the pace; the frames are made once, kept (`--notemp`) for the
per-job overhead's reruns (7 Snakemake runs, not 9).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import imageio.v3 as iio
import numpy as np
import yaml
from PIL import Image

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.support.fake_vlm import FakeVLM  # noqa: E402
from tests.support.scripted_judge import Judge, Transitioner  # noqa: E402
from tests.support.workflow import default_config  # noqa: E402
from vgi_models.video import checkpoint_name  # noqa: E402
from workflow_scripts.benchmark.study import load_study  # noqa: E402

KEY_ENV = "BENCH_VLM_KEY"
BUCKET_S = 10
PER_LEVEL = 10  # the release's instances per level; the half subset takes 5 of them


def profile_judge_api() -> int:
    """The `judge_api` resource of the SLURM profile: VLM jobs at once."""
    profile = yaml.safe_load((REPO / "slurm" / "config.yaml").read_text(encoding="utf-8"))
    return int(profile["resources"]["judge_api"])


def reply_times(spec: str) -> tuple[float | Callable[[], float], float]:
    """`--delay` as FakeVLM's delay and its mean: seconds, or lognormal:MEDIAN:SIGMA."""
    if not spec.startswith("lognormal:"):
        return float(spec), float(spec)
    median, sigma = map(float, spec.split(":")[1:])
    draws = random.Random(0)
    return (lambda: draws.lognormvariate(math.log(median), sigma)), median * math.exp(sigma**2 / 2)


def per_task(per_level: int) -> int:
    """Videos per task of the half subset: ceil(per_level / 2) of each of 3 levels."""
    return 3 * math.ceil(per_level / 2)


def make_benchmark(root: Path, tasks: int, per_level: int) -> list[str]:
    """`tasks` tasks of the taxonomy in the release's layout: `per_level` instances per level, a
    1280x720 input image each, a task-wide rubric of three items; returns their names."""
    taxonomy = yaml.safe_load((REPO / "tasks" / "task_names.yaml").read_text(encoding="utf-8"))
    names = [task for domain in taxonomy.values() for task in domain][:tasks]
    rng = np.random.default_rng(0)
    for task in names:
        folder = root / task
        for level in (1, 2, 3):
            for n in range(1, per_level + 1):
                path = folder / "input_image" / f"lv{level}" / f"{task}_lv{level}_{n:03d}.png"
                path.parent.mkdir(parents=True, exist_ok=True)
                pixels = np.repeat(rng.integers(0, 256, (90, 160, 3), np.uint8), 8, 0)
                Image.fromarray(np.repeat(pixels, 8, 1)).save(path)
        prompt = folder / "prompt" / "video_gen_prompt" / f"{task}.txt"
        prompt.parent.mkdir(parents=True)
        prompt.write_text(f"Solve the {task} puzzle shown in the image.\n", encoding="utf-8")
        spec = folder / "judge_spec"
        spec.mkdir()
        (spec / "_completeness_judge.txt").write_text("2 solved, 1 partly, 0 not at all\n")
        rubric = [f"Overall task: solve {task}.", "Pieces keep their shape.", "No piece teleports."]
        rubric.append("The final state is the solution.")
        (spec / f"_judge_rubric_{task}.json").write_text(json.dumps({"rubric": rubric}))
    return names


def study_config(work: Path, videos: int, per_level: int, url: str, rpm: int | None) -> dict:
    """The run's config: one model (a copy of tiny_wan22), enough tasks for `videos` of the
    half subset, `per_level` instances per level."""
    root = work / "bench_data"
    tasks = make_benchmark(root, math.ceil(videos / per_task(per_level)), per_level)
    config = default_config(work, root=str(root), tasks=tasks, levels=[1, 2, 3], subset="half")
    registry = yaml.safe_load((REPO / "config" / "models.yaml").read_text(encoding="utf-8"))
    path = work / "models.yaml"
    path.write_text(yaml.safe_dump({"bench_00": registry["tiny_wan22"]}), "utf-8")
    config.update(model_registry=str(path), models=["bench_00"])
    config["judge"].update(enabled=True, model="fake-judge", base_url=url, api_key_env=KEY_ENV)
    if rpm is not None:
        config["judge"]["requests_per_minute"] = rpm
    return config


def premade_videos(config: dict, height: int) -> int:
    """Writes each (model, instance)'s video, checkpoints and generation.json (on every
    core; 16:9 clips `height` pixels high); returns the number of videos. Every clip
    differs, so no two judge calls are the same call."""
    registry = yaml.safe_load(Path(config["model_registry"]).read_text(encoding="utf-8"))
    study = load_study(config, registry)
    runs = [
        Path(config["outdir"]) / model / task / instance
        for model in study.models
        for instance, task in study.instances["task"].items()
    ]

    def write(count: int, run: Path) -> None:
        (run / "denoise").mkdir(parents=True, exist_ok=True)
        video = clip(count, 81, height)
        iio.imwrite(run / "video.mp4", video, plugin="pyav", codec="libx264", fps=16)
        for step in study.steps:
            frames = clip(count * 100 + step, 9, height)
            path = run / "denoise" / checkpoint_name(step, "x0")
            iio.imwrite(path, frames, plugin="pyav", codec="libx264", fps=16)
        (run / "generation.json").write_text(json.dumps({"premade": True}), "utf-8")

    with ThreadPoolExecutor(os.cpu_count()) as pool:
        list(pool.map(write, range(len(runs)), runs))
    return len(runs)


def clip(seed: int, frames: int, height: int) -> np.ndarray:
    """`frames` 16:9 frames `height` pixels high: a bar moving over a background unique to
    `seed`."""
    rng = np.random.default_rng(seed)
    tile = rng.integers(0, 256, (1, 9, 16, 3), np.uint8)
    px = height // 9  # a tile's side, the bar's width
    video = np.repeat(np.repeat(tile, px, 1), px, 2).repeat(frames, 0)
    for i in range(frames):
        x = (px // 2 * i) % (15 * px)
        video[i, :, x : x + px] = 255
    return video


def snakemake(work: Path, *args: str) -> tuple[float, float, subprocess.CompletedProcess]:
    """Wall seconds, CPU seconds (Snakemake and its jobs) and the finished process."""
    command = [sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "-d", str(work)]
    command += ["--configfile", str(work / "config.yaml"), *args]
    start, cpu = time.perf_counter(), resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode:
        sys.exit(f"snakemake {' '.join(args)} failed:\n{done.stdout[-3000:]}")
    seconds = after.ru_utime + after.ru_stime - cpu.ru_utime - cpu.ru_stime
    return time.perf_counter() - start, seconds, done


def timeline(requests, start: float, end: float) -> list[dict]:
    """Per BUCKET_S seconds from `start`: calls answered per second, mean calls in flight
    (sampled every 0.1 s), 429s."""
    rows = []
    for k in range(math.ceil((end - start) / BUCKET_S)):
        t0 = start + k * BUCKET_S
        t1 = t0 + BUCKET_S
        samples = [t0 + i / 10 for i in range(10 * BUCKET_S) if t0 + i / 10 < end]
        flight = [sum(r.at <= t < r.done for r in requests) for t in samples]
        answered = sum(t0 <= r.done < t1 for r in requests if r.status == 200)
        rows.append(
            {
                "t_s": k * BUCKET_S,
                "calls_per_s": answered / BUCKET_S,
                "in_flight": round(sum(flight) / len(flight), 1),
                "http_429": sum(t0 <= r.at < t1 and r.status == 429 for r in requests),
            }
        )
    return rows


def job_overhead(work: Path, outdir: Path, rule: str, folder: str, jobs: int, kept: bool) -> float:
    """Seconds per `rule` job rerun one at a time with every call cached, over a dry run
    (their frames, a temporary output deleted after a run, made again first, untimed, unless
    `kept`: then every run keeps them, `--notemp`)."""
    targets = sorted(str(p) for p in outdir.glob(f"*/*/{folder}"))[:jobs]
    frames = [str(Path(target).parent / "frames") for target in targets]
    if not kept:
        snakemake(work, "--cores", str(os.cpu_count()), "--", *frames)
    args = ["--cores", "1", "--resources", "judge_api=1", "--forcerun", rule]
    args += ["--notemp"] * kept + ["--", *targets]
    dry, _, _ = snakemake(work, "-n", *args)
    wall, _, _ = snakemake(work, *args)
    return (wall - dry) / len(targets)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--videos", type=int, default=120, help="rounded up to whole tasks")
    parser.add_argument("--per-level", type=int, default=PER_LEVEL, help="instances per level")
    parser.add_argument("--delay", default="2", help="seconds per reply, or lognormal:M:S")
    parser.add_argument("--rpm", type=int, default=600, help="the server's requests a minute")
    parser.add_argument("--judge-api", type=int, default=profile_judge_api())
    parser.add_argument("--no-pace", action="store_true", help="leave requests_per_minute out")
    parser.add_argument("--height", type=int, default=720, help="the clips' height (16:9)")
    smoke = "CI: --videos 3 --per-level 2 --height 180 --delay 0.05 --rpm 6000, frames kept"
    parser.add_argument("--smoke", action="store_true", help=smoke)
    args = parser.parse_args()
    if args.smoke:  # the sizes shrink; flags given explicitly still win
        parser.set_defaults(videos=3, per_level=2, height=180, delay="0.05", rpm=6000)
        args = parser.parse_args()
    schema = (REPO / "config" / "schemas" / "config.schema.yaml").read_text(encoding="utf-8")
    pace = not args.no_pace and "requests_per_minute" in schema
    judge = Judge(tier=2, violations=[0], nominate=[20, 60])
    delay, mean_delay = reply_times(args.delay)
    fake = FakeVLM(Transitioner(other=judge), delay=delay, rate_limit=(args.rpm, 60.0))
    os.environ[KEY_ENV] = "bench-key"
    with tempfile.TemporaryDirectory() as tmp, fake:
        work = Path(tmp)
        rpm = args.rpm if pace else None
        config = study_config(work, args.videos, args.per_level, fake.url, rpm)
        (work / "config.yaml").write_text(yaml.safe_dump(config), "utf-8")
        videos = premade_videos(config, args.height)
        snakemake(work, "--cores", "1", "--touch", "generate_all")
        outdir = Path(config["outdir"])
        frames = [str(folder.parent / "frames") for folder in outdir.glob("*/*/*_lv*")]
        cores = str(os.cpu_count())
        _, frames_cpu, _ = snakemake(work, "--cores", cores, "--", *sorted(set(frames)))
        run = ["--cores", str(args.judge_api), "--resources", f"judge_api={args.judge_api}"]
        run += ["--notemp"] * args.smoke  # the frames kept for the per-job overhead
        wall, cpu, done = snakemake(work, *run, "--", "judge_all", "transitions_all")
        if "rule generate:" in done.stdout:
            sys.exit("the run regenerated videos")
        requests = list(fake.requests)
        overhead = {
            rule: round(job_overhead(work, outdir, rule, folder, 3, args.smoke), 2)
            for rule, folder in (("judge", "judge"), ("label_transitions", "transitions"))
        }
        scores = [json.loads(p.read_text()) for p in outdir.glob("*/*/judge/*/score.json")]
        labels = [json.loads(p.read_text()) for p in outdir.glob("*/*/transitions/*.json")]
    assert len(scores) == len(labels) == videos, (len(scores), len(labels), videos)
    ok = [r for r in requests if r.status == 200]
    start, end = min(r.at for r in requests), max(r.done for r in requests)
    concurrency = config["judge"]["max_concurrency"]
    cap = args.judge_api * concurrency
    quota = args.rpm / 60
    ideal = min(quota, cap / mean_delay)
    rate, wall_rate = len(ok) / (end - start), len(ok) / wall
    rows = timeline(requests, start, end)
    figures = {
        "videos": videos,
        "delay": args.delay,
        "mean_delay_s": round(mean_delay, 2),
        "rpm_limit": args.rpm,
        "pace": pace,
        "judge_api": args.judge_api,
        "max_concurrency": concurrency,
        "in_flight_cap": cap,
        "calls": len(ok),
        "http_429": sum(r.status == 429 for r in requests),
        "span_s": round(end - start, 1),
        "wall_s": round(wall, 1),
        "calls_per_s": round(rate, 2),
        "ideal_calls_per_s": round(ideal, 2),
        "efficiency": round(rate / ideal, 3),
        "of_quota": round(rate / quota, 3),
        "cpu_s_per_video": round(cpu / videos, 2),
        "frames_cpu_s_per_video": round(frames_cpu / videos, 2),
        "wall_efficiency": round(wall_rate / ideal, 3),
        "max_in_flight": fake.max_in_flight,
        "status_ok": sum(d["status"] == "ok" for d in scores + labels),
        "job_overhead_s": overhead,
        "timeline": rows,
    }
    report(figures)
    print(json.dumps(figures))


def report(f: dict) -> None:
    print(
        f"judge study: {f['videos']} videos, replies {f['delay']} s (mean {f['mean_delay_s']} s), "
        f"{f['rpm_limit']} "
        f"requests/min limit; judge_api {f['judge_api']} jobs x {f['max_concurrency']} calls = "
        f"{f['in_flight_cap']} in flight at most; requests_per_minute set: {f['pace']}"
    )
    head = ("calls", "429s", "span s", "wall s", "calls/s", "ideal/s", "eff.", "quota")
    head += ("wall eff.", "CPU s/vid", "frames")
    print("".join(f"{h:>10}" for h in head) + "  max in flight")
    values = ("calls", "http_429", "span_s", "wall_s", "calls_per_s", "ideal_calls_per_s")
    values += ("efficiency", "of_quota", "wall_efficiency", "cpu_s_per_video")
    values += ("frames_cpu_s_per_video",)
    print("".join(f"{f[v]:>10}" for v in values) + f"{f['max_in_flight']:>15}")
    print(f"timeline ({BUCKET_S} s buckets): t s, calls/s, mean in flight, 429s")
    for row in f["timeline"]:
        print("".join(f"{row[k]:>10}" for k in ("t_s", "calls_per_s", "in_flight", "http_429")))
    print(
        "per-job overhead (a rerun with every call cached, one job at a time): "
        + ", ".join(f"{rule} {s:.2f} s" for rule, s in f["job_overhead_s"].items())
    )
    print(f"documents ok: {f['status_ok']} of {2 * f['videos']}")


if __name__ == "__main__":
    main()
