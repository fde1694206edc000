"""What validating a release-size benchmark's input images costs: header only vs full decode.

Writes `--count` (default 810, the release) 1280x720 PNGs with drawn content (shapes,
gradients, text, mild noise: not flat colour, so the encoder has work to undo) into a
temporary folder, then times over all of them

- `header`: `Image.open(path).size`, what validation read before;
- `full`: `Image.open(path).load()`, every pixel decoded (a truncated file fails);
- `threads`: the same through `ImageCheck.warm` (a thread pool), no cache yet;
- `cached`: `workflow_scripts.benchmark.image_check.ImageCheck` with a warm cache file.

    python bench/image_check.py [--count N] [--smoke]

Prints a table, then (last line) one JSON object with the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from workflow_scripts.benchmark.image_check import ImageCheck  # noqa: E402

W, H = 1280, 720


def picture(seed: int) -> Image.Image:
    """A puzzle-like frame: a gradient, shapes, lines, text and a little sensor noise."""
    rng = random.Random(seed)
    x = np.linspace(0, 1, W)[None, :, None]
    y = np.linspace(0, 1, H)[:, None, None]
    base = 200 + 40 * x * np.array([1, 0.5, 0]) + 30 * y * np.array([0, 0.5, 1])
    noise = np.random.default_rng(seed).normal(0, 2, (H, W, 3))
    img = Image.fromarray(np.clip(base + noise, 0, 255).astype(np.uint8))
    draw = ImageDraw.Draw(img)
    for _ in range(40):
        x0, y0 = rng.randrange(W - 100), rng.randrange(H - 100)
        box = (x0, y0, x0 + rng.randrange(20, 100), y0 + rng.randrange(20, 100))
        color = tuple(rng.randrange(256) for _ in range(3))
        (draw.ellipse if rng.random() < 0.5 else draw.rectangle)(box, fill=color, outline="black")
    for _ in range(30):
        points = [(rng.randrange(W), rng.randrange(H)) for _ in range(2)]
        draw.line(points, fill="black", width=rng.randrange(1, 6))
    draw.text((20, 20), f"instance {seed:03d}", fill="black", font_size=32)
    return img


def timed(paths: list[Path], check) -> float:
    start = time.perf_counter()
    for path in paths:
        check(path)
    return time.perf_counter() - start


def header(path: Path) -> None:
    with Image.open(path) as image:
        image.size  # noqa: B018


def full(path: Path) -> None:
    with Image.open(path) as image:
        image.load()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--count", type=int, default=810)
    parser.add_argument("--smoke", action="store_true", help="CI: --count 6 (still 1280x720)")
    args = parser.parse_args()
    if args.smoke:  # the sizes shrink; flags given explicitly still win
        parser.set_defaults(count=6)
        args = parser.parse_args()
    count = args.count
    with tempfile.TemporaryDirectory(prefix="image_check_") as name:
        folder = Path(name)
        paths = []
        for i in range(count):
            path = folder / f"task_lv{i % 3 + 1}_{i:03d}.png"
            picture(i).save(path)
            paths.append(path)
        megabytes = sum(p.stat().st_size for p in paths) / 2**20
        cache = folder / "cache.json"
        figures = {
            "images": count,
            "megabytes": round(megabytes, 1),
            "cpus": os.cpu_count(),
            "header_s": round(timed(paths, header), 3),
            "full_s": round(timed(paths, full), 3),
        }
        with ImageCheck(cache) as check:  # fills the cache
            start = time.perf_counter()
            check.warm(paths)
            figures["threads_s"] = round(time.perf_counter() - start, 3)
        with ImageCheck(cache) as check:
            figures["cached_s"] = round(timed(paths, check.size), 3)
    for key, value in figures.items():
        print(f"{key:>10}  {value}")
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
