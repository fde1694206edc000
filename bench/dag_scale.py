"""How long Snakemake takes to build the DAG of a paper-size study, and how much memory.

Builds, in a temporary directory, a synthetic benchmark in the official VGI-Bench layout
(every task of tasks/task_names.yaml x 3 levels x 10 instances with 3-digit ids, tiny 16:9
PNGs hard-linked from one file, a rubric entry per instance), a model registry with 7
copies of the `tiny_wan22` entry (different seeds) and a config pointing at both. Then
it times the plain dry run

    snakemake -s <repo>/Snakefile -d <tmp> --configfile <cfg> -n --quiet --cores 1

as a child process (wall time, and CPU time and peak RSS from `os.wait4`; on a shared
machine the CPU time is the steadier figure), median of `--repeats` runs,
for three scenarios:

- `half`: the paper's study (half of the instances per task and level), nothing run yet;
- `full`: every instance, nothing run yet;
- `half_done`: `half` after a finished run: every output listed by `--summary` exists
  (created empty, each rule's files a minute newer than those of the rules it reads),
  so the dry run has nothing to do but still checks every file.

Job counts come from one extra `-n --quiet rules` run (its "Job stats" table). The design
keeps 1 job per (model, instance) (`generate`) and 3 per (model, task) (`prepare_frames`,
`judge`, `label_transitions`); the goal is a `half` dry run within 8 CPU seconds.

    python bench/dag_scale.py [--repeats N]

Prints a table, then (last line) one JSON object with the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml
from PIL import Image

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from workflow_scripts.benchmark.instances import load_instances, select_subset  # noqa: E402

N_MODELS, LEVELS, PER_LEVEL, GOAL_CPU_S = 7, (1, 2, 3), 10, 8.0
TAXONOMY, OVERLAP = REPO / "tasks/task_names.yaml", REPO / "tasks/overlap.yaml"
SNAKEMAKE = [sys.executable, "-m", "snakemake"]
COLUMNS = {  # table header: figure
    "instances": "instances",
    "models": "models",
    "jobs": "jobs",
    "jobs/(m,i)": "jobs_per_model_instance",
    "jobs/(m,t)": "jobs_per_model_task",
    "dry-run s": "dry_run_s",
    "CPU s": "cpu_s",
    "peak MB": "peak_mb",
}


def build_benchmark(root: Path) -> None:
    """Every task x level x instance in the official layout; one PNG, hard-linked."""
    png = root.parent / "frame.png"
    Image.new("RGB", (32, 18), "white").save(png)
    tasks = [task for domain in yaml.safe_load(TAXONOMY.read_text()).values() for task in domain]
    for task in tasks:
        for level in LEVELS:
            folder = root / task / "input_image" / f"lv{level}"
            folder.mkdir(parents=True)
            for i in range(1, PER_LEVEL + 1):
                os.link(png, folder / f"{task}_lv{level}_{i:03d}.png")
        (root / task / "prompt/video_gen_prompt").mkdir(parents=True)
        (root / task / f"prompt/video_gen_prompt/{task}.txt").write_text(f"Solve the {task}.")
        spec = root / task / "judge_spec"
        spec.mkdir()
        rubric = [f"Overall task: Solve the {task}.", "No object changes shape.", "No cuts."]
        entries = [
            {"id": f"{task}_lv{level}_{i:03d}", "rubric": rubric}
            for level in LEVELS
            for i in range(1, PER_LEVEL + 1)
        ]  # one entry per instance, as the release has them
        (spec / f"_judge_rubric_{task}.json").write_text(json.dumps(entries))
        (spec / "_completeness_judge.txt").write_text("0: unsolved. 1: partly. 2: solved.")


def write_config(tmp: Path, subset: str) -> Path:
    """A registry of N_MODELS tiny models and a config for `subset`; returns the config."""
    tiny = yaml.safe_load((REPO / "config/models.yaml").read_text())["tiny_wan22"]
    registry = {
        f"tiny_wan22_s{seed}": {**tiny, "generation": {**tiny["generation"], "seed": seed}}
        for seed in range(N_MODELS)
    }
    (tmp / "models.yaml").write_text(yaml.safe_dump(registry))
    config = {
        "outdir": str(tmp / "results"),
        "model_registry": str(tmp / "models.yaml"),
        "benchmark": {
            "root": str(tmp / "bench_data"),
            "taxonomy": str(TAXONOMY),
            "overlap": str(OVERLAP),
            "subset": subset,
        },
        "models": list(registry),
        # every rule of the study, as with an API key set (a dry run makes no call)
        "judge": {"enabled": True, "api_key_env": "DAG_SCALE_UNUSED_KEY"},
    }
    path = tmp / f"config_{subset}.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def snakemake(tmp: Path, config: Path, *args: str) -> tuple[float, float, float, str]:
    """Run snakemake on `config` in `tmp`: (wall s, CPU s, peak RSS MB, stdout+stderr)."""
    cmd = [*SNAKEMAKE, "-s", str(REPO / "Snakefile"), "-d", str(tmp), "--configfile", str(config)]
    cmd += ["--cores", "1", *args]
    with tempfile.TemporaryFile("w+") as log:
        start = time.perf_counter()
        env = {**os.environ, "DAG_SCALE_UNUSED_KEY": "not-used-by-a-dry-run"}
        proc = subprocess.Popen(cmd, cwd=tmp, stdout=log, stderr=subprocess.STDOUT, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        log.seek(0)
        output = log.read()
    if proc.returncode:
        raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}):\n{output[-3000:]}")
    return seconds, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, output


def job_stats(output: str) -> dict[str, int]:
    """`{rule: count}` from the first "Job stats" table of a dry run ({} if nothing to do)."""
    table = output.split("Job stats:", 1)[1] if "Job stats:" in output else ""
    rows = re.findall(r"^(\w+)\s+(\d+)$", table.split("\n\n", 1)[0], flags=re.M)
    return {rule: int(count) for rule, count in rows if rule != "total"}


def rule_depths(tmp: Path, config: Path) -> dict[str, int]:
    """Each rule's depth in the rule graph (0: needs no other rule's output)."""
    graph = snakemake(tmp, config, "--rulegraph")[-1]
    names = dict(re.findall(r'^\s*(\d+)\[label = "(\w+)"', graph, flags=re.M))
    edges = re.findall(r"^\s*(\d+) -> (\d+)", graph, flags=re.M)
    depth = dict.fromkeys(names, 0)
    for _ in names:  # longest paths; the graph is acyclic
        for src, dst in edges:
            depth[dst] = max(depth[dst], depth[src] + 1)
    return {names[node]: d for node, d in depth.items()}


def create_all_outputs(tmp: Path, config: Path) -> int:
    """Create every output of the DAG (empty), each rule's newer than its inputs' rules."""
    depths = rule_depths(tmp, config)
    summary = snakemake(tmp, config, "--summary")[-1]
    lines = summary[summary.index("output_file\t") :].splitlines()[1:]
    rows = [line.split("\t") for line in lines if "\t" in line]
    start = time.time() + 1  # after every benchmark file
    for output, _, rule, *_ in rows:
        path = Path(output)
        if path.suffix:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.touch()
        else:  # directory outputs (denoise/, gallery sheets) have no suffix
            path.mkdir(parents=True, exist_ok=True)
        os.utime(path, (start + 60 * depths[rule],) * 2)
    return len(rows)


def measure(tmp: Path, config: Path, repeats: int, scenario: str) -> dict:
    """Median dry-run time, CPU time and peak memory, and the jobs the dry run would run."""
    runs = [snakemake(tmp, config, "-n", "--quiet") for _ in range(repeats)]
    output = snakemake(tmp, config, "-n", "--quiet", "rules")[-1]
    if scenario == "half_done" and "Nothing to be done" not in output:
        raise RuntimeError(f"outputs were created, yet the dry run has work:\n{output[-3000:]}")
    stats = job_stats(output)
    bench = yaml.safe_load(config.read_text())["benchmark"]
    table = load_instances(bench["root"], bench["taxonomy"], bench["overlap"])
    instances = len(select_subset(table, bench["subset"], 0))
    pairs, tasks = N_MODELS * instances, N_MODELS * len(set(table["task"]))
    per_pair = sum(n for n in stats.values() if n >= pairs) / pairs
    per_task = sum(n for n in stats.values() if n == tasks) / tasks
    return {
        "instances": instances,
        "models": N_MODELS,
        "jobs": sum(stats.values()),
        "jobs_by_rule": stats,
        "jobs_per_model_instance": round(per_pair, 2),
        "jobs_per_model_task": round(per_task, 2),
        "dry_run_s": round(statistics.median(run[0] for run in runs), 2),
        "dry_run_runs_s": [round(run[0], 2) for run in runs],
        "cpu_s": round(statistics.median(run[1] for run in runs), 2),
        "peak_mb": round(max(run[2] for run in runs), 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=3, help="dry runs per scenario")
    repeats = parser.parse_args().repeats
    figures: dict = {}
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="dag_scale_") as name:
        tmp = Path(name)
        build_benchmark(tmp / "bench_data")
        configs = {subset: write_config(tmp, subset) for subset in ("half", "full")}
        for subset, config in configs.items():
            figures[subset] = measure(tmp, config, repeats, subset)
        start = time.perf_counter()
        n_files = create_all_outputs(tmp, configs["half"])
        setup_s = round(time.perf_counter() - start)
        figures["half_done"] = measure(tmp, configs["half"], repeats, "half_done")
        figures["half_done"].update(outputs=n_files, setup_s=setup_s)

    load_after = os.getloadavg()[0]
    print(f"{'scenario':<10}" + "".join(f"{h:>11}" for h in COLUMNS))
    for scenario, f in figures.items():
        print(f"{scenario:<10}" + "".join(f"{f[k]:>11}" for k in COLUMNS.values()))
    print(f"median of {repeats} dry runs; jobs: left to run; goal: half <= {GOAL_CPU_S:g} CPU s")
    print(f"load average before/after: {load:.2f}/{load_after:.2f} on {os.cpu_count()} CPUs")
    figures.update(
        goal_half_cpu_s=GOAL_CPU_S,
        half_within_goal=figures["half"]["cpu_s"] <= GOAL_CPU_S,
        cpus=os.cpu_count(),
        load_avg_before=round(load, 2),
        load_avg_after=round(load_after, 2),
    )
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
