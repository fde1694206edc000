"""Cluster time limits per model: minutes of one `generate` job, derived from its FLOP count.

FLOP per video = denoising steps x FLOP per step, by bench/gpu_generate.py's per-call formula
(block Linears + attention; every guidance call of a step counted). LTX-2.3's two-stage recipe
adds its refinement: one unguided call per stage-2 sigma at twice the height and width. Wan2.1
is costed as one Wan2.2 expert at its own settings (its extra image cross-attention over 257
CLIP tokens is under 1%).

    minutes = FLOP / (UTILISATION x dense bf16 peak) / 60 x MARGIN + OVERHEAD

UTILISATION 0.5 of the datasheet peak (bench/gpu_generate.py measures the real rate where a GPU
is lent); MARGIN 1.5 for offload transfers, slower nodes and the spread between instances;
OVERHEAD the minutes outside denoising (loading the weights, eight tiled VAE decodes: the video
and seven checkpoints), an allowance until measured. Rounded up to 10 minutes. SLURM kills a job
at its limit, so `resources.runtime` in config/models.yaml holds the H20 figure (the slowest
GPU here): set the other column on H100/H200-only partitions.

    python bench/runtimes.py [--smoke]

The table is arithmetic, already its smallest run: `--smoke` (CI) changes nothing. Entries of
one family at the same generation settings share one FLOP count (building a full-size module
tree on the meta device is most of the run).
"""

from __future__ import annotations

import argparse
import json
import math

import yaml
from gpu_generate import LTX23, REPO, Hunyuan15, MiniMaxH3, Wan

from vgi_models.registry import load_registry

GPUS = {"H20": 148e12, "H100/H200": 989e12}  # dense bf16 FLOP/s (NVIDIA datasheets, SXM)
OVERHEAD_MIN = {"H20": 30, "H100/H200": 15}
UTILISATION, MARGIN, ROUND_TO = 0.5, 1.5, 10
PLANS = {
    "wan21": Wan,
    "wan22": Wan,
    "hunyuan15": Hunyuan15,
    "ltx23": LTX23,
    "minimax_h3": MiniMaxH3,
}
_FLOP: dict[tuple[str, str], float] = {}  # (family, generation settings as JSON) -> FLOP


def video_flop(spec) -> float:
    """FLOP of one video of registry entry `spec` at its generation settings, counted once
    per family and settings."""
    key = (spec.family, json.dumps(spec.generation, sort_keys=True))
    if key not in _FLOP:
        total = spec.steps * PLANS[spec.family](spec, "full").step_tflop() * 1e12
        stage = spec.generation.get("stage_2")
        if stage:
            doubled = {k: 2 * spec.generation[k] for k in ("height", "width")}
            second = LTX23(spec.with_generation(**doubled), "full")
            call = second.flops["cond+uncond"]  # batch 2 (cond, uncond); the refinement runs one
            total += len(stage["sigmas"]) * sum(call.values()) / 2
        _FLOP[key] = total
    return _FLOP[key]


def minutes(flop: float, gpu: str) -> int:
    """The job time limit for `flop` of denoising on `gpu`."""
    raw = flop / (UTILISATION * GPUS[gpu]) / 60 * MARGIN + OVERHEAD_MIN[gpu]
    return ROUND_TO * math.ceil(raw / ROUND_TO)


def table() -> dict[str, dict]:
    """{model key: PFLOP per video and minutes per GPU} for every real-weight pipeline of the
    registry."""
    registry = load_registry(yaml.safe_load((REPO / "config/models.yaml").read_text()))
    rows = {}
    for key, spec in registry.items():
        if not spec.denoises or spec.tiny:  # video APIs: no GPU job
            continue
        flop = video_flop(spec)
        rows[key] = {"pflop": round(flop / 1e15, 1)} | {g: minutes(flop, g) for g in GPUS}
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="CI: the same run (nothing to shrink)")
    parser.parse_args()
    rows = table()
    print(f"utilisation {UTILISATION}, margin x{MARGIN}, overhead {OVERHEAD_MIN} min")
    print(f"{'model':<24} {'PFLOP/video':>12} " + " ".join(f"{g:>10}" for g in GPUS))
    for key, row in rows.items():
        print(f"{key:<24} {row['pflop']:>12} " + " ".join(f"{row[g]:>10}" for g in GPUS))
    print(json.dumps({"utilisation": UTILISATION, "margin": MARGIN, "minutes": rows}))


if __name__ == "__main__":
    main()
