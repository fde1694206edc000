"""What a resumable state costs: the seconds and megabytes of a save.

1. Each tiny family of config/models.yaml generates once with a save after every step
   (`save_every: 1`), timed and sized at each write; printed: the median seconds per save,
   the state's size at the last save, and the job's seconds against a run without saves.
2. A Wan2.2-I2V-A14B 720p state, from its latent shape (16 channels, 21 latent frames of
   90 x 160 for 81 frames at 1280 x 720, float32): the loop latent, UniPC's two model outputs
   and last sample, and the seven x0 checkpoints of the study, written here the way a job
   writes it (a temporary file, fsync, rename). On a shared filesystem it is slower.

    python bench/resume_cost.py [--folder DIR] [--threads 1] [--models KEY ...]
                                [--inference-steps N] [--no-warm-up] [--writes 3] [--smoke]

`--inference-steps N` runs N denoising steps (default: each model's own, 40), recording the
study steps up to N; `--writes` times that many writes of the 720p state (the median).
`--smoke` (CI): one tiny family (`--models tiny_ltx23_two_stage`: a state with a stage), 4
steps, no warm-up; the Wan2.2 720p state at its full size, written once
(`--inference-steps 4 --no-warm-up --writes 1`).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch
import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # this checkout's packages, not an installed copy
from vgi_models.generate import generate  # noqa: E402
from vgi_models.registry import load_registry  # noqa: E402
from vgi_models.resume import Trajectory  # noqa: E402

IMAGE = REPO / "tasks/examples/maze_square/input_image/lv1/maze_square_lv1_001.png"
TINY = ["tiny_wan22", "tiny_wan21", "tiny_hunyuan15", "tiny_ltx23_two_stage", "tiny_vbvr_wan22"]
STEPS = [1, 2, 3, 4, 10, 20, 40]
WAN22_720P_LATENT = (1, 16, 21, 90, 160)


def timed_writes() -> list[tuple[float, int]]:
    """Wrap `Trajectory._write`: each write's seconds and the file's bytes, in order."""
    writes, write = [], Trajectory._write

    def timed(self, why=""):
        t0 = time.perf_counter()
        write(self, why)
        writes.append((time.perf_counter() - t0, self.path.stat().st_size))

    Trajectory._write = timed
    return writes


def tiny_families(folder: Path, models: list[str], steps: int | None, warm_up: bool) -> dict:
    """Each model's saves and job time, at `steps` denoising steps (None: its own)."""
    specs = load_registry(yaml.safe_load((REPO / "config/models.yaml").read_text()))
    if steps:
        specs = {
            key: spec.with_generation(num_inference_steps=steps) for key, spec in specs.items()
        }
    record = [step for step in STEPS if not steps or step <= steps]
    writes = timed_writes()
    print("model                 s/save   MB at last save   job s (saves / none)")
    results = {}
    if warm_up:  # not timed
        generate(specs[models[0]], str(IMAGE), "go", record, "x0", folder / "warm-up")
    for model in models:
        job = {}
        for every in (1, 10_000):
            del writes[:]
            t0 = time.perf_counter()
            state_dir = folder / "resume" / model / str(every)
            generate(specs[model], str(IMAGE), "go", record, "x0", folder / model, state_dir, every)
            job[every] = time.perf_counter() - t0
            if every == 1:
                seconds = statistics.median(s for s, _ in writes)
                size = writes[-1][1] / 1e6
        print(f"{model:22s}{seconds:7.4f}{size:14.2f}{job[1]:14.1f} / {job[10_000]:.1f}")
        results[model] = {"save_s": round(seconds, 4), "state_mb": round(size, 2)}
        results[model] |= {"job_s_saving_every_step": round(job[1], 2)}
        results[model] |= {"job_s_no_saves": round(job[10_000], 2)}
    return results


def wan22_720p(folder: Path, writes: int) -> dict:
    one = torch.randn(WAN22_720P_LATENT)
    mb = one.numel() * one.element_size() / 1e6
    t0 = time.perf_counter()
    loop = [one.to("cpu", copy=True) for _ in range(4)]  # a step's snapshot (from the GPU there)
    copy_s = time.perf_counter() - t0
    trajectory = Trajectory.__new__(Trajectory)  # only what a write reads
    trajectory.path, trajectory.key = folder / "wan22_720p.pt", "wan22_720p"
    trajectory.decides = {}
    trajectory.outputs, trajectory.attempts, trajectory.stage = [], [], 0
    trajectory.started, trajectory.from_step, trajectory.computed = time.perf_counter(), 0, 40
    trajectory.latest = {
        "stage": 0,
        "step": 40,
        "steps": 40,
        "tensors": {"latents": loop[0]},
        "schedulers": [{"model_outputs": loop[1:3], "last_sample": loop[3]}],
        "recorder": {"checkpoints": {s: {"x0": one.clone(), "xt": None} for s in STEPS}},
    }
    seconds = []
    for _ in range(writes):
        t0 = time.perf_counter()
        trajectory._write()
        seconds.append(time.perf_counter() - t0)
    size = trajectory.path.stat().st_size / 1e6
    print(
        f"\nWan2.2 720p: a latent is {mb:.1f} MB; a state at step 40 (loop latent, 2 model "
        f"outputs, last sample, 7 checkpoints) is {size:.0f} MB, written in "
        f"{statistics.median(seconds):.2f} s (median of {writes}, this disk); a step's "
        f"snapshot copy {copy_s:.3f} s"
    )
    write_s = round(statistics.median(seconds), 3)
    return {"latent_mb": round(mb, 1), "state_mb": round(size), "write_s": write_s}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--folder", type=Path, default=None)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--models", nargs="+", choices=TINY, default=TINY)
    parser.add_argument("--inference-steps", type=int, help="denoising steps (the model's)")
    parser.add_argument("--no-warm-up", action="store_true", help="time the first generation")
    parser.add_argument("--writes", type=int, default=3, help="timed writes of the 720p state")
    smoke = "CI: --models tiny_ltx23_two_stage --inference-steps 4 --no-warm-up --writes 1"
    parser.add_argument("--smoke", action="store_true", help=smoke)
    args = parser.parse_args()
    if args.smoke:  # the sizes shrink; flags given explicitly still win
        parser.set_defaults(models=["tiny_ltx23_two_stage"], inference_steps=4, writes=1)
        parser.set_defaults(no_warm_up=True)
        args = parser.parse_args()
    torch.set_num_threads(args.threads)
    with tempfile.TemporaryDirectory(dir=args.folder) as folder:
        tiny = tiny_families(Path(folder), args.models, args.inference_steps, not args.no_warm_up)
        results = {"tiny": tiny, "wan22_720p": wan22_720p(Path(folder), args.writes)}
    print(json.dumps(results))


if __name__ == "__main__":
    main()
