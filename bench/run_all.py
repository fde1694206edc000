"""Run every benchmark and print one table of their headline figures.

Runs bench/dag_scale.py, bench/hook_overhead.py, bench/judge_throughput.py,
bench/hunyuan_attention_memory.py and bench/runtimes.py (with `--gpu` also
bench/gpu_generate.py, which needs a CUDA GPU) one after another, each as a child
process whose report is passed through; reads each one's last output line (its JSON
summary) and prints one table: benchmark, figure, value, goal. The last line is one JSON
object with the same figures. `--smoke` passes `--smoke` to each: their smallest sizes, a
check that they run (CI), not figures to read. `--only NAME ...` runs those alone. A
benchmark that fails is reported as such; the exit code is then 1.

    python bench/run_all.py [--smoke] [--gpu] [--only NAME ...]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
NAMES = (
    "dag_scale",
    "hook_overhead",
    "judge_throughput",
    "hunyuan_attention_memory",
    "runtimes",
    "gpu_generate",  # with --gpu (or --only)
)


def run(name: str, smoke: bool) -> dict:
    """Run one benchmark, echoing its report; its last-line JSON summary (or the failure)."""
    command = [sys.executable, str(BENCH / f"{name}.py"), *(["--smoke"] if smoke else [])]
    print(f"\n=== {name}: {' '.join(command[1:])}", flush=True)
    start = time.perf_counter()
    last = ""
    with subprocess.Popen(command, stdout=subprocess.PIPE, text=True) as process:
        for line in process.stdout:
            print(last, end="", flush=True)  # one line behind: the JSON summary is not echoed
            last = line
    seconds = round(time.perf_counter() - start, 1)
    try:
        return json.loads(last) | {"wall_s": seconds, "returncode": process.returncode}
    except json.JSONDecodeError:
        print(last, end="")
        return {"wall_s": seconds, "returncode": process.returncode or 1, "error": "no JSON"}


def headlines(name: str, summary: dict) -> list[tuple[str, object, str]]:
    """(figure, value, goal) rows of one benchmark's summary."""
    if name == "dag_scale":
        half, full, done = summary["half"], summary["full"], summary["half_done"]
        return [
            ("dry run CPU s, half (the study)", half["cpu_s"], ""),
            ("dry run CPU s, bare Snakefile, same jobs", summary["bare"]["cpu_s"], ""),
            ("half / bare CPU", summary["half_bare_cpu_ratio"], f"<= {summary['goal_ratio']}"),
            ("dry run s, full", full["dry_run_s"], ""),
            ("dry run s, half, all outputs exist", done["dry_run_s"], ""),
            ("jobs per (model, instance)", half["jobs_per_model_instance"], "few"),
        ]
    if name == "hook_overhead":
        return [
            *[
                (f"capture ratio, {m}", r["capture_ratio"], "")
                for m, r in summary["models"].items()
            ],
            (
                "capture ratio, worst family",
                summary["worst_capture_ratio"],
                f"<= {summary['goal']}",
            ),
            *[
                (f"capture+decode ratio, {m}", r["capture_decode_ratio"], "")
                for m, r in summary["models"].items()
            ],
        ]
    if name == "judge_throughput":
        goal = f">= {summary['goal_efficiency']}"
        return [
            *[
                (f"judge efficiency, concurrency {r['concurrency']}", r["efficiency"], goal)
                for r in summary["throughput"]
            ],
            ("frame extraction speed-up (decord vs ffmpeg)", summary["frames"]["speedup"], ""),
        ]
    if name == "hunyuan_attention_memory":
        return [
            (f"full-size GB per attention call, {p}", summary[p]["full_size_estimate_gb"], goal)
            for p, goal in (("diffusers", ""), ("prefix", "fits an H20 (96 GB)"))
        ]
    if name == "runtimes":
        return [
            (f"job limit min, {model}, {gpu}", row[gpu], "")
            for model, row in summary["minutes"].items()
            for gpu in ("H20", "H100/H200")
        ]
    rows = []  # gpu_generate: a row per (model, option)
    for row in summary["rows"]:
        name = f"{row['model']}, {row['option']} ({row['class']})"
        rows += [
            (f"s per video, {name}", row.get("video_s", row["status"]), ""),
            (f"MFU %, {name}", row.get("mfu_pct"), ""),
            (f"peak GiB, {name}", row.get("peak_gib"), ""),
            (f"difference from native, {name}", row.get("call_rel"), ""),
        ]
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="each at its smallest size (CI)")
    parser.add_argument("--gpu", action="store_true", help="also bench/gpu_generate.py")
    parser.add_argument("--only", nargs="+", choices=NAMES, help="these benchmarks alone")
    args = parser.parse_args()
    names = args.only or [name for name in NAMES if args.gpu or name != "gpu_generate"]
    results = {name: run(name, args.smoke) for name in names}

    table: dict[str, dict] = {}
    print(f"\n{'benchmark':<17}{'figure':<46}{'value':>10}  goal")
    for name, summary in results.items():
        if summary["returncode"]:
            rows = [("FAILED, exit code", summary["returncode"], "")]
        else:
            rows = headlines(name, summary)
        rows.append(("wall s", summary["wall_s"], ""))
        table[name] = {figure: value for figure, value, _ in rows}
        for figure, value, goal in rows:
            shown = f"{value:.4g}" if isinstance(value, float) else str(value)
            print(f"{name:<17}{figure:<46}{shown:>10}  {goal}")
    print(json.dumps(table))
    sys.exit(1 if any(summary["returncode"] for summary in results.values()) else 0)


if __name__ == "__main__":
    main()
