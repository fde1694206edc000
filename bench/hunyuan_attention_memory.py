"""Peak memory of one HunyuanVideo-1.5 joint attention, diffusers' processor against ours (CPU).

For growing joint sequence lengths S (video tokens + a padded text of `--text` tokens, half of
it valid) it runs one `HunyuanVideo15TransformerBlock` attention in bfloat16 with each processor
and reads the process's peak resident memory (VmHWM, reset before each call through
/proc/self/clear_refs). The growth over the inputs' own memory is fitted as a S^2 + b S
(least squares, per processor); the full-size estimate is the fit at 720p and 121 frames
(111,600 video tokens + 2,000 text: S = 113,600), with b scaled from the bench's width to the
real model's 2048 (16 heads x 128). The S^2 term does not depend on the width.

    python bench/hunyuan_attention_memory.py [--sizes 4096 8192 12288 16384] [--heads 2] [--smoke]

`--smoke` (CI) measures two short sequences (`--sizes 1024 2048`): the fit is then exact and
its full-size estimate rough.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

import numpy as np
import torch
from diffusers.models.transformers.transformer_hunyuan_video15 import (
    HunyuanVideo15AttnProcessor2_0,
    HunyuanVideo15TransformerBlock,
)

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from vgi_models.families.hunyuan15_attention import PrefixAttnProcessor  # noqa: E402

FULL_S, FULL_WIDTH, HEAD_DIM = 113_600, 2048, 64
PROCESSORS = {"diffusers": HunyuanVideo15AttnProcessor2_0, "prefix": PrefixAttnProcessor}


def peak_rss() -> int:
    """The process's peak resident memory in bytes since the last reset."""
    status = Path("/proc/self/status").read_text()
    return int(re.search(r"VmHWM:\s+(\d+)", status).group(1)) * 1024


def reset_peak() -> None:
    Path("/proc/self/clear_refs").write_text("5")


def measure(block, processor, seq: int, text: int) -> int:
    """Bytes the attention call adds to the peak over its inputs."""
    torch.manual_seed(0)
    width = block.attn.heads * HEAD_DIM
    video = torch.randn(1, seq - text, width, dtype=torch.bfloat16)
    words = torch.randn(1, text, width, dtype=torch.bfloat16)
    mask = torch.arange(text)[None] < text // 2  # valid first, padding last
    block.attn.set_processor(processor())
    reset_peak()
    before = peak_rss()
    with torch.no_grad():
        block.attn(video, words, mask)
    return peak_rss() - before


def fit(sizes: list[int], grown: list[int]) -> tuple[float, float]:
    """(a, b) of the least-squares fit grown = a S^2 + b S."""
    s = np.asarray(sizes, dtype=float)
    (a, b), *_ = np.linalg.lstsq(np.stack([s**2, s], axis=1), np.asarray(grown, float), rcond=None)
    return float(a), float(b)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[4096, 8192, 12288, 16384])
    parser.add_argument("--heads", type=int, default=2)
    parser.add_argument("--text", type=int, default=256)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--smoke", action="store_true", help="CI: --sizes 1024 2048")
    args = parser.parse_args()
    if args.smoke:  # the sizes shrink; flags given explicitly still win
        parser.set_defaults(sizes=[1024, 2048])
        args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    block = HunyuanVideo15TransformerBlock(args.heads, HEAD_DIM, mlp_ratio=1.0)
    block = block.to(torch.bfloat16).eval()
    width = args.heads * HEAD_DIM

    rows, figures = [], {}
    for name, processor in PROCESSORS.items():
        measure(block, processor, args.sizes[0], args.text)  # warm up allocator and kernels
        grown = [measure(block, processor, s, args.text) for s in args.sizes]
        a, b = fit(args.sizes, grown)
        full = a * FULL_S**2 + b * FULL_S * FULL_WIDTH / width
        figures[name] = {
            "peak_growth_bytes": dict(zip(map(str, args.sizes), grown, strict=True)),
            "bytes_per_s2": round(a, 3),
            "bytes_per_s_at_bench_width": round(b, 1),
            "full_size_estimate_gb": round(full / 1e9, 2),
        }
        rows += [(name, s, g) for s, g in zip(args.sizes, grown, strict=True)]

    print(f"one attention call, bfloat16, width {width}, text {args.text} (half padding)")
    print(f"{'processor':<10} {'S':>7} {'peak growth MB':>15}")
    for name, s, g in rows:
        print(f"{name:<10} {s:>7} {g / 2**20:>15.1f}")
    print(f"\nfit a*S^2 + b*S; full size S = {FULL_S:,}, width {FULL_WIDTH}:")
    for name, f in figures.items():
        print(
            f"{name:<10} a = {f['bytes_per_s2']:.3f} B/S^2, "
            f"b = {f['bytes_per_s_at_bench_width']:.0f} B/S  ->  "
            f"{f['full_size_estimate_gb']:.1f} GB per call at full size"
        )
    print(json.dumps({"width": width, "text": args.text, "full_s": FULL_S} | figures))


if __name__ == "__main__":
    main()
