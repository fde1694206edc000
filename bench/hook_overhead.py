"""Cost of the denoising-checkpoint hooks on tiny models (CPU).

For every tiny family of config/models.yaml it times, interleaved in one run so that machine
load affects all three alike:

- plain: the pipeline alone (`output_type="latent"`);
- capture: the same call with the scheduler hook recording x0 at the seven study steps;
- capture+decode: capture plus decoding all seven checkpoints with the pipeline's VAE.

and prints the median seconds and the ratios to plain (goal for capture: <= 1.02).

    python bench/hook_overhead.py [--repeats 7] [--threads 1] [--models KEY ...]
                                  [--inference-steps N] [--no-warm-up] [--smoke]

`--inference-steps N` runs N denoising steps (default: each model's own, 40), recording the
study steps up to N. `--smoke` (CI) times one family once, 4 steps (4 checkpoints), without
the warm-up (`--models tiny_hunyuan15 --repeats 1 --inference-steps 4 --no-warm-up`).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import torch
import yaml
from PIL import Image

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # this checkout's packages, not an installed copy
from vgi_models.hooks import CheckpointRecorder  # noqa: E402
from vgi_models.registry import load_registry  # noqa: E402

IMAGE = REPO / "tasks/examples/maze_square/input_image/lv1/maze_square_lv1_001.png"
STEPS = (1, 2, 3, 4, 10, 20, 40)
MODELS = ("tiny_wan22", "tiny_wan21", "tiny_hunyuan15", "tiny_ltx23")


def timed_call(spec, pipe, image, mode: str) -> float:
    """Seconds of one generation in `mode` (plain, capture, capture+decode)."""
    kwargs = spec.pipeline_family.call_kwargs(spec.generation)
    generator = torch.Generator().manual_seed(0)
    start = time.perf_counter()
    with torch.inference_mode():
        if mode == "plain":
            pipe(
                image=image, prompt="solve it", generator=generator, output_type="latent", **kwargs
            )
        else:
            with CheckpointRecorder(pipe.scheduler, STEPS) as rec:
                out = pipe(
                    image=image,
                    prompt="solve it",
                    generator=generator,
                    output_type="latent",
                    **kwargs,
                )
            if mode == "capture+decode":
                final = spec.pipeline_family.final_latents(pipe, out)
                for checkpoint in rec.checkpoints.values():
                    spec.pipeline_family.decode(
                        pipe, spec.pipeline_family.checkpoint_latents(pipe, checkpoint.x0, final)
                    )
    return time.perf_counter() - start


def measure(spec, repeats: int, warm_up: bool) -> dict:
    """Median seconds per mode, modes rotated each repeat after one warm-up of each."""
    pipe = spec.build()
    image = Image.open(IMAGE).convert("RGB")
    modes = ["plain", "capture", "capture+decode"]
    for mode in modes * warm_up:
        timed_call(spec, pipe, image, mode)
    times = {mode: [] for mode in modes}
    for i in range(repeats):
        for mode in modes[i % 3 :] + modes[: i % 3]:
            times[mode].append(timed_call(spec, pipe, image, mode))
    return {mode: statistics.median(values) for mode, values in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--models", nargs="+", choices=MODELS, default=list(MODELS))
    parser.add_argument("--inference-steps", type=int, help="denoising steps (the model's)")
    parser.add_argument("--no-warm-up", action="store_true", help="time the first calls")
    smoke = "CI: --models tiny_hunyuan15 --repeats 1 --inference-steps 4 --no-warm-up"
    parser.add_argument("--smoke", action="store_true", help=smoke)
    args = parser.parse_args()
    if args.smoke:  # the sizes shrink; flags given explicitly still win
        parser.set_defaults(models=["tiny_hunyuan15"], repeats=1, inference_steps=4)
        parser.set_defaults(no_warm_up=True)
        args = parser.parse_args()
    torch.set_num_threads(args.threads)
    specs = load_registry(yaml.safe_load((REPO / "config/models.yaml").read_text()))
    results = {}
    header = ("plain s", "capture s", "+decode s", "capture", "+decode")
    print(f"{'model':16}" + "".join(f"{h:>11}" for h in header))
    for key in args.models:
        spec = specs[key]
        if args.inference_steps:
            spec = spec.with_generation(num_inference_steps=args.inference_steps)
        t = measure(spec, args.repeats, not args.no_warm_up)
        results[key] = {
            "plain_s": round(t["plain"], 4),
            "capture_s": round(t["capture"], 4),
            "capture_decode_s": round(t["capture+decode"], 4),
            "capture_ratio": round(t["capture"] / t["plain"], 4),
            "capture_decode_ratio": round(t["capture+decode"] / t["plain"], 3),
        }
        r = results[key]
        print(
            f"{key:16}{r['plain_s']:11.3f}{r['capture_s']:11.3f}{r['capture_decode_s']:11.3f}"
            f"{r['capture_ratio']:11.3f}{r['capture_decode_ratio']:11.2f}"
        )
    worst = max(r["capture_ratio"] for r in results.values())
    print(f"capture-only overhead, worst family: x{worst:.3f} (goal <= 1.02)")
    print(json.dumps({"models": results, "worst_capture_ratio": worst, "goal": 1.02}))


if __name__ == "__main__":
    main()
