"""The judge stage at study scale: the workflow's `judge_all` and `transitions_all` against
FakeVLM with a fixed reply time and a rate limit the double enforces (429 beyond R
requests in any 60 s, with a retry hint, as the real APIs do).

Videos are pre-made here, not generated: for each (model, instance) a unique 5 s clip
(81 frames at 16 fps) and its denoising checkpoints are written where `generate` puts
them, and `snakemake --touch generate_all` marks them up to date, so the run schedules
only the VLM jobs. The models are copies of the registry's `tiny_wan22` under new keys
(as many as the video count needs over the benchmark's level-1 half subset). The judge
nominates two frames in round 1, so a video costs 7 judge calls (completeness, 3 round-1
windows, 2 round-2 windows, the verdict) and one transition call per checkpoint pair.

Figures: calls per second over the span from the first request to the last reply (and
over Snakemake's whole wall time) against the ideal min(R / 60, in-flight cap / reply
time), the cap being `judge_api` jobs x `judge.max_concurrency` calls; calls in flight
over time; 429s; and the per-job overhead (seconds per job of a rerun whose calls all
come from the cache, one job at a time, over a dry run of the same). `judge.requests_per_minute`
is set to R where the workflow has the key (`--no-pace` leaves it out).

    python bench/judge_study.py [--videos 100] [--delay 2] [--rpm 600] [--judge-api N]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import imageio.v3 as iio
import numpy as np
import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.support.fake_vlm import FakeVLM  # noqa: E402
from tests.support.scripted_judge import Judge, Transitioner  # noqa: E402
from tests.support.workflow import default_config  # noqa: E402
from vgi_models.video import checkpoint_name  # noqa: E402
from workflow_scripts.benchmark.study import load_study  # noqa: E402

KEY_ENV = "BENCH_VLM_KEY"
BUCKET_S = 10


def profile_judge_api() -> int:
    """The `judge_api` resource of the SLURM profile: VLM jobs at once."""
    profile = yaml.safe_load((REPO / "slurm" / "config.yaml").read_text(encoding="utf-8"))
    return int(profile["resources"]["judge_api"])


def study_config(work: Path, videos: int, url: str, rpm: int | None) -> dict:
    """The run's config and registry (copies of tiny_wan22, enough for `videos`)."""
    config = default_config(work, levels=[1], subset="half")
    registry = yaml.safe_load((REPO / "config" / "models.yaml").read_text(encoding="utf-8"))
    config["models"] = ["tiny_wan22"]
    per_model = len(load_study(config, registry).instances)
    models = [f"bench_{m:02d}" for m in range(math.ceil(videos / per_model))]
    path = work / "models.yaml"
    path.write_text(yaml.safe_dump({m: registry["tiny_wan22"] for m in models}), "utf-8")
    config.update(model_registry=str(path), models=models)
    config["judge"].update(enabled=True, model="fake-judge", base_url=url, api_key_env=KEY_ENV)
    if rpm is not None:
        config["judge"]["requests_per_minute"] = rpm
    return config


def premade_videos(config: dict) -> int:
    """Writes each (model, instance)'s video, checkpoints and generation.json; returns the
    number of videos. Every clip differs, so no two judge calls are the same call."""
    registry = yaml.safe_load(Path(config["model_registry"]).read_text(encoding="utf-8"))
    study = load_study(config, registry)
    count = 0
    for model in study.models:
        for instance, task in study.instances["task"].items():
            run = Path(config["outdir"]) / model / task / instance
            (run / "denoise").mkdir(parents=True, exist_ok=True)
            iio.imwrite(run / "video.mp4", clip(count, 81), plugin="pyav", codec="libx264", fps=16)
            for step in study.steps:
                frames = clip(count * 100 + step, 9)
                path = run / "denoise" / checkpoint_name(step, "x0")
                iio.imwrite(path, frames, plugin="pyav", codec="libx264", fps=16)
            (run / "generation.json").write_text(json.dumps({"premade": True}), "utf-8")
            count += 1
    return count


def clip(seed: int, frames: int) -> np.ndarray:
    """`frames` 128x72 frames: a bar moving over a background unique to `seed`."""
    rng = np.random.default_rng(seed)
    video = np.broadcast_to(rng.integers(0, 256, (1, 72, 128, 3), np.uint8), (frames, 72, 128, 3))
    video = video.copy()
    for i in range(frames):
        video[i, :, (4 * i) % 120 : (4 * i) % 120 + 8] = 255
    return video


def snakemake(work: Path, *args: str) -> tuple[float, subprocess.CompletedProcess]:
    command = [sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "-d", str(work)]
    command += ["--configfile", str(work / "config.yaml"), *args]
    start = time.perf_counter()
    done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if done.returncode:
        sys.exit(f"snakemake {' '.join(args)} failed:\n{done.stdout[-3000:]}")
    return time.perf_counter() - start, done


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


def job_overhead(work: Path, outdir: Path, rule: str, output: str, jobs: int) -> float:
    """Seconds per `rule` job rerun one at a time with every call cached, over a dry run."""
    targets = sorted(str(p) for p in outdir.glob(f"*/*/*/{output}"))[:jobs]
    args = ["--cores", "1", "--resources", "judge_api=1", "--forcerun", rule, "--", *targets]
    dry, _ = snakemake(work, "-n", *args)
    wall, _ = snakemake(work, *args)
    return (wall - dry) / len(targets)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--videos", type=int, default=100)
    parser.add_argument("--delay", type=float, default=2.0, help="server seconds per reply")
    parser.add_argument("--rpm", type=int, default=600, help="the server's requests a minute")
    parser.add_argument("--judge-api", type=int, default=profile_judge_api())
    parser.add_argument("--no-pace", action="store_true", help="leave requests_per_minute out")
    args = parser.parse_args()
    schema = (REPO / "config" / "schemas" / "config.schema.yaml").read_text(encoding="utf-8")
    pace = not args.no_pace and "requests_per_minute" in schema
    judge = Judge(tier=2, violations=[0], nominate=[20, 60])
    fake = FakeVLM(Transitioner(other=judge), delay=args.delay, rate_limit=(args.rpm, 60.0))
    os.environ[KEY_ENV] = "bench-key"
    with tempfile.TemporaryDirectory() as tmp, fake:
        work = Path(tmp)
        config = study_config(work, args.videos, fake.url, args.rpm if pace else None)
        (work / "config.yaml").write_text(yaml.safe_dump(config), "utf-8")
        videos = premade_videos(config)
        snakemake(work, "--cores", "1", "--touch", "generate_all")
        run = ["--cores", str(args.judge_api), "--resources", f"judge_api={args.judge_api}"]
        wall, done = snakemake(work, *run, "--", "judge_all", "transitions_all")
        if "rule generate:" in done.stdout:
            sys.exit("the run regenerated videos")
        requests = list(fake.requests)
        outdir = Path(config["outdir"])
        overhead = {
            rule: round(job_overhead(work, outdir, rule, output, 3), 2)
            for rule, output in (("judge", "score.json"), ("label_transitions", "transitions.json"))
        }
        scores = [json.loads(p.read_text()) for p in outdir.glob("*/*/judge/*/score.json")]
        labels = [json.loads(p.read_text()) for p in outdir.glob("*/*/transitions/*.json")]
    assert len(scores) == len(labels) == videos, (len(scores), len(labels), videos)
    ok = [r for r in requests if r.status == 200]
    start, end = min(r.at for r in requests), max(r.done for r in requests)
    concurrency = config["judge"]["max_concurrency"]
    cap = args.judge_api * concurrency
    ideal = min(args.rpm / 60, cap / args.delay)
    rate, wall_rate = len(ok) / (end - start), len(ok) / wall
    rows = timeline(requests, start, end)
    figures = {
        "videos": videos,
        "delay_s": args.delay,
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
        f"judge study: {f['videos']} videos, {f['delay_s']} s replies, {f['rpm_limit']} "
        f"requests/min limit; judge_api {f['judge_api']} jobs x {f['max_concurrency']} calls = "
        f"{f['in_flight_cap']} in flight at most; requests_per_minute set: {f['pace']}"
    )
    head = ("calls", "429s", "span s", "wall s", "calls/s", "ideal/s", "eff.", "wall eff.")
    print("".join(f"{h:>10}" for h in head) + "  max in flight")
    values = ("calls", "http_429", "span_s", "wall_s", "calls_per_s", "ideal_calls_per_s")
    values += ("efficiency", "wall_efficiency")
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
