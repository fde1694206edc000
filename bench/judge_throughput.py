"""Judge throughput against FakeVLM, and the cost of frame extraction.

Calls: N tiny videos (written here), each judged by M calls carrying its frames at 4 fps,
all sent at once through one VLMClient (real google-genai or openai SDK) to FakeVLM, a
local test double that answers every call after a fixed delay. Per concurrency level
(fresh cache each): wall time, speed-up over concurrency 1, the ideal min(concurrency,
calls), efficiency = speed-up / ideal (goal >= 0.9), and the most requests the server saw
at once. A rerun on a warm cache must make no call.

Frames: the same frames by `sample_frames` (one open, one batched read) and by one
`ffmpeg -ss <t> -i video -frames:v 1` process per frame (the official judge's way).

    python bench/judge_throughput.py [--videos 24] [--calls 4] [--delay 0.2] [--backend gemini]

`--smoke` (CI): 2 videos x 2 calls, 0.05 s replies, concurrency 1 and 2.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import imageio.v2 as imageio
import imageio_ffmpeg
import numpy as np
from PIL import Image

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.support.fake_vlm import FakeVLM  # noqa: E402
from workflow_scripts.judge.client import Part, Request, VLMClient  # noqa: E402
from workflow_scripts.judge.frames import sample_frames, to_jpeg  # noqa: E402

FPS = 4
SCHEMA = {
    "type": "object",
    "properties": {"comment": {"type": "string"}, "frames": {"type": "array"}},
    "required": ["comment", "frames"],
}


def write_videos(folder: Path, count: int, size=(320, 180), frames: int = 33) -> list[Path]:
    """`count` clips of `frames` frames at 16 fps: a square moving over a gradient."""
    width, height = size
    background = np.linspace(0, 255, width, dtype=np.uint8)[None, :, None]
    paths = []
    for v in range(count):
        path = folder / f"video{v:02d}.mp4"
        with imageio.get_writer(path, fps=16, quality=8, macro_block_size=1) as out:
            for i in range(frames):
                frame = np.broadcast_to(background, (height, width, 3)).copy()
                x = (8 * i + 13 * v) % (width - 32)
                frame[60:92, x : x + 32] = (255, 40 * (v % 6), 0)
                out.append_data(frame)
        paths.append(path)
    return paths


def ffmpeg_frames(video: Path, times: list[float], folder: Path) -> list[bytes]:
    """One ffmpeg process per frame, each written as PNG, then resized and JPEG-encoded."""
    jpegs = []
    for k, t in enumerate(times):
        png = folder / f"{video.stem}_{k}.png"
        command = [imageio_ffmpeg.get_ffmpeg_exe(), "-v", "error", "-y", "-ss", f"{t:.3f}"]
        subprocess.run([*command, "-i", str(video), "-frames:v", "1", str(png)], check=True)
        with Image.open(png) as image:
            jpegs.append(to_jpeg(image, 512))
    return jpegs


def bench_frames(videos: list[Path], folder: Path) -> tuple[dict, dict]:
    """Seconds for all videos' frames both ways; also returns the sampled frames."""
    start = time.perf_counter()
    sampled = {video: sample_frames(video, FPS) for video in videos}
    decord_s = time.perf_counter() - start
    start = time.perf_counter()
    for video, frames in sampled.items():
        ffmpeg_frames(video, [frame.time for frame in frames], folder)
    ffmpeg_s = time.perf_counter() - start
    count = sum(len(frames) for frames in sampled.values())
    figures = {
        "videos": len(videos),
        "frames": count,
        "decord_batched_s": round(decord_s, 3),
        "ffmpeg_per_frame_s": round(ffmpeg_s, 3),
        "speedup": round(ffmpeg_s / decord_s, 1),
    }
    return figures, sampled


def requests_for(sampled: dict, calls: int) -> list[Request]:
    return [
        Request(
            kind="window",
            parts=(Part.of_text(f"{video.name}, call {m}"),)
            + tuple(Part.of_image(frame.jpeg) for frame in frames),
            schema=SCHEMA,
        )
        for video, frames in sampled.items()
        for m in range(calls)
    ]


async def judge_all(client: VLMClient, requests: list[Request]) -> int:
    """Asks everything at once; returns how many replies came from the cache."""
    async with client:
        replies = await asyncio.gather(*(client.ask(request) for request in requests))
    return sum(reply.cached for reply in replies)


def serve(pipe, delay: float) -> None:
    """FakeVLM in its own process, as a remote server would be: it does not share the
    client's GIL. Answers "stats" with (requests so far, most in flight since last asked)."""
    with FakeVLM(delay=delay) as fake:
        pipe.send(fake.url)
        while pipe.recv() == "stats":
            pipe.send((len(fake.requests), fake.max_in_flight))
            fake.max_in_flight = 0


def bench_calls(args, requests: list[Request], folder: Path) -> tuple[list[dict], dict]:
    pipe, child = multiprocessing.Pipe()
    server = multiprocessing.Process(target=serve, args=(child, args.delay), daemon=True)
    server.start()
    url = pipe.recv()

    def stats() -> tuple[int, int]:
        pipe.send("stats")
        return pipe.recv()

    config = {"backend": args.backend, "model": "fake", "base_url": url}
    if args.backend == "openai":
        config["base_url"] += "/v1"
    warm_up = VLMClient(config, "bench-key", folder / "warm-up")  # SDK's one-off set-up
    asyncio.run(judge_all(warm_up, requests[:1]))
    rows = []
    for concurrency in sorted({1, *args.concurrency}):
        sent = stats()[0]
        client = VLMClient(
            {**config, "max_concurrency": concurrency}, "bench-key", folder / f"c{concurrency}"
        )
        start, cpu = time.perf_counter(), time.process_time()
        asyncio.run(judge_all(client, requests))
        wall, cpu = time.perf_counter() - start, time.process_time() - cpu
        total, in_flight = stats()
        ideal = min(concurrency, len(requests))
        speedup = (rows[0]["wall_s"] if rows else wall) / wall
        rows.append(
            {
                "concurrency": concurrency,
                "calls": total - sent,
                "wall_s": round(wall, 3),
                "speedup": round(speedup, 2),
                "ideal": ideal,
                "efficiency": round(speedup / ideal, 3),
                "max_in_flight": in_flight,
                "client_cpu_ms_per_call": round(1000 * cpu / len(requests), 2),
            }
        )
    start = time.perf_counter()
    hits = asyncio.run(judge_all(client, requests))
    rerun = {
        "asks": len(requests),
        "cache_hits": hits,
        "calls": stats()[0] - total,
        "wall_s": round(time.perf_counter() - start, 3),
    }
    pipe.send("stop")
    server.join()
    return rows, rerun


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--videos", type=int, default=24)
    parser.add_argument("--calls", type=int, default=4, help="calls per video")
    parser.add_argument("--delay", type=float, default=0.2, help="server seconds per reply")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 2, 4, 8, 16])
    parser.add_argument("--backend", choices=["gemini", "openai"], default="gemini")
    smoke = "CI: --videos 2 --calls 2 --delay 0.05 --concurrency 2"
    parser.add_argument("--smoke", action="store_true", help=smoke)
    args = parser.parse_args()
    if args.smoke:  # the sizes shrink; flags given explicitly still win
        parser.set_defaults(videos=2, calls=2, delay=0.05, concurrency=[2])
        args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        videos = write_videos(folder, args.videos)
        frames, sampled = bench_frames(videos, folder)
        rows, rerun = bench_calls(args, requests_for(sampled, args.calls), folder)

    print(f"judge calls: {args.videos} videos x {args.calls} calls, {args.delay} s per reply")
    print(
        f"{'concurrency':>11}{'calls':>7}{'wall s':>9}{'speed-up':>10}{'ideal':>7}"
        f"{'efficiency':>12}{'in flight':>11}{'cpu ms/call':>13}"
    )
    for r in rows:
        print(
            f"{r['concurrency']:>11}{r['calls']:>7}{r['wall_s']:>9.2f}{r['speedup']:>10.2f}"
            f"{r['ideal']:>7}{r['efficiency']:>12.3f}{r['max_in_flight']:>11}"
            f"{r['client_cpu_ms_per_call']:>13.1f}"
        )
    worst = min(r["efficiency"] for r in rows)
    met = [r["concurrency"] for r in rows if r["efficiency"] >= 0.9]
    print(f"worst efficiency {worst:.3f}; goal >= 0.9 met at concurrency {met}")
    print(
        "(the client's serial CPU per call, in the SDKs, delays the c-th request of a burst"
        " by ~c x cpu ms/call; the goal needs that small against the reply time)"
    )
    print(
        f"rerun on a warm cache: {rerun['asks']} asks, {rerun['calls']} calls, "
        f"{rerun['wall_s']:.2f} s"
    )
    print(f"\nframe extraction: {frames['videos']} videos, {frames['frames']} frames at {FPS} fps")
    print(f"  decord, one open + one batched read per video: {frames['decord_batched_s']:.2f} s")
    print(f"  one ffmpeg -ss process per frame:              {frames['ffmpeg_per_frame_s']:.2f} s")
    print(f"  speed-up x{frames['speedup']}")
    summary = {
        "backend": args.backend,
        "videos": args.videos,
        "calls_per_video": args.calls,
        "delay_s": args.delay,
        "throughput": rows,
        "worst_efficiency": worst,
        "goal_efficiency": 0.9,
        "goal_met_at_concurrency": met,
        "cache_rerun": rerun,
        "frames": frames,
    }
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
