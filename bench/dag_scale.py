"""How long Snakemake takes to build the DAG of a paper-size study, against its own floor.

Builds, in a temporary directory, a synthetic benchmark in the official VGI-Bench layout
(every task of tasks/task_names.yaml x 3 levels x 10 instances with 3-digit ids, tiny 16:9
PNGs hard-linked from one file, a rubric entry per instance), a model registry with 7
copies of the `tiny_wan22` entry (different seeds) and a config pointing at both. Then
it times the plain dry run

    snakemake -s <repo>/Snakefile -d <tmp> --configfile <cfg> -n --quiet --cores 1

as a child process (wall time, and CPU time and peak RSS from `os.wait4`; on a shared
machine the CPU time is the steadier figure), median of `--repeats` runs,
for these scenarios:

- `half`: the paper's study (half of the instances per task and level), nothing run yet;
- `bare`: Snakemake's own floor: bench/dag_scale_bare.smk, a Snakefile without project
  code with the job shape and count of `half` (the same rules with their outputs, params,
  resources, input functions and wildcard constraints), copied into the temporary folder;
- `full`: every instance, nothing run yet;
- `half_done`: `half` after a finished run: every output listed by `--summary` exists
  (created empty, each rule's files a minute newer than those of the rules it reads),
  so the dry run has nothing to do but still checks every file.

`half`, `bare` and `full` run interleaved (one of each, `--repeats` times), so that the
load of a shared machine weighs on them alike; the goal is `half` within 1.5x `bare`'s
CPU time. Job counts come from one extra `-n --quiet rules` run (its "Job stats" table).
The design keeps 1 job per (model, instance) (`generate`) and 3 per (model, task)
(`prepare_frames`, `judge`, `label_transitions`).

    python bench/dag_scale.py [--repeats N] [--smoke]

`--smoke`: the smallest size (3 tasks x 3 levels x 2 instances, 2 models, 1 repeat), to
check that the benchmark runs: the one timed run of each scenario is the `-n --quiet rules`
run (no extra one for the job counts), so 6 Snakemake runs in all (with the 2 that create
`half_done`'s outputs). Prints a table, then (last line) one JSON object with the
figures.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd
import yaml
from PIL import Image

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from workflow_scripts.benchmark.instances import load_instances, select_subset  # noqa: E402

LEVELS, GOAL_RATIO = (1, 2, 3), 1.5
TAXONOMY, OVERLAP = REPO / "tasks/task_names.yaml", REPO / "tasks/overlap.yaml"
PAPER_TABLE = REPO / "tasks/paper_tables.csv"
BARE = Path(__file__).resolve().parent / "dag_scale_bare.smk"
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


@dataclasses.dataclass(frozen=True)
class Size:
    """The synthetic study: tasks (None: every task of the taxonomy), instances per level,
    models, dry runs per scenario, and whether the job counts come from an extra untimed run
    (else from the timed runs, each then `-n --quiet rules`)."""

    tasks: int | None
    per_level: int
    models: int
    repeats: int
    count_apart: bool = True


PAPER, SMOKE = Size(None, 10, 7, 3), Size(3, 2, 2, 1, count_apart=False)


def build_benchmark(root: Path, size: Size = PAPER, image_tasks: int = 0) -> None:
    """Every task x level x instance in the official layout; one PNG, hard-linked. The first
    `image_tasks` tasks also ship an image prompt (the image branch's)."""
    png = root.parent / "frame.png"
    Image.new("RGB", (640, 360), "white").save(png)  # 16:9, as large as every API model takes
    tasks = [task for domain in yaml.safe_load(TAXONOMY.read_text()).values() for task in domain]
    for k, task in enumerate(tasks[: size.tasks]):
        for level in LEVELS:
            folder = root / task / "input_image" / f"lv{level}"
            folder.mkdir(parents=True)
            for i in range(1, size.per_level + 1):
                os.link(png, folder / f"{task}_lv{level}_{i:03d}.png")
        (root / task / "prompt/video_gen_prompt").mkdir(parents=True)
        (root / task / f"prompt/video_gen_prompt/{task}.txt").write_text(f"Solve the {task}.")
        if k < image_tasks:
            (root / task / "prompt/image_gen_prompt").mkdir()
            (root / task / f"prompt/image_gen_prompt/{task}.txt").write_text(f"Solve the {task}.")
        spec = root / task / "judge_spec"
        spec.mkdir()
        rubric = [f"Overall task: Solve the {task}.", "No object changes shape.", "No cuts."]
        entries = [
            {"id": f"{task}_lv{level}_{i:03d}", "rubric": rubric}
            for level in LEVELS
            for i in range(1, size.per_level + 1)
        ]  # one entry per instance, as the release has them
        (spec / f"_judge_rubric_{task}.json").write_text(json.dumps(entries))
        (spec / "_completeness_judge.txt").write_text("0: unsolved. 1: partly. 2: solved.")


def write_config(tmp: Path, subset: str, size: Size = PAPER) -> Path:
    """A registry of `size.models` tiny models and a config for `subset`; returns the config."""
    tiny = yaml.safe_load((REPO / "config/models.yaml").read_text())["tiny_wan22"]
    registry = {
        f"tiny_wan22_s{seed}": {**tiny, "generation": {**tiny["generation"], "seed": seed}}
        for seed in range(size.models)
    }
    (tmp / "models.yaml").write_text(yaml.safe_dump(registry))
    config = {
        "outdir": str(tmp / "results"),
        "model_registry": str(tmp / "models.yaml"),
        "benchmark": {
            "root": str(tmp / "bench_data"),
            "taxonomy": str(TAXONOMY),
            "overlap": str(OVERLAP),
            "paper_table": str(PAPER_TABLE),
            "subset": subset,
        },
        "models": list(registry),
        # every rule of the study, as with an API key set (a dry run makes no call)
        "judge": {"enabled": True, "api_key_env": "DAG_SCALE_UNUSED_KEY"},
    }
    path = tmp / f"config_{subset}.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def selected(config: Path) -> pd.DataFrame:
    """The instance table `config` selects."""
    bench = yaml.safe_load(config.read_text())["benchmark"]
    table = load_instances(bench["root"], bench["taxonomy"], bench["overlap"])
    return select_subset(table, bench["subset"], 0)


def write_bare(tmp: Path, rows: pd.DataFrame) -> Path:
    """The bare Snakefile in `tmp/bare`, with its instance sheet (`rows`: their prompts and
    images) and models (the registry's, with its settings); returns it."""
    folder = tmp / "bare"
    folder.mkdir()
    sheet = {
        instance: {
            "task": row["task"],
            "image": str(row["image"]),
            "prompt": row["prompt"],
            "goal": row["goal"],
            "checklist": list(row["checklist"]),
        }
        for instance, row in rows.iterrows()
    }
    registry = yaml.safe_load((tmp / "models.yaml").read_text())
    resources = {"threads": 1, "gpu": 1, "mem_mb": 16000, "runtime": 60}
    models = {
        name: {"settings": json.dumps(entry), **resources} for name, entry in registry.items()
    }
    (folder / "instances.json").write_text(json.dumps(sheet))
    (folder / "models.json").write_text(json.dumps(models))
    (folder / "env.yaml").write_text("dependencies: [python]\n")
    (folder / "job.py").write_text("")
    return Path(shutil.copy(BARE, folder / "Snakefile"))


def snakemake(
    tmp: Path, config: Path | None, *args: str, snakefile: Path = REPO / "Snakefile"
) -> tuple[float, float, float, str]:
    """Run snakemake on `snakefile` with `config` (None: none) in `tmp`: (wall s, CPU s,
    peak RSS MB, stdout+stderr)."""
    cmd = [*SNAKEMAKE, "-s", str(snakefile), "-d", str(tmp)]
    cmd += ["--configfile", str(config)] if config else []
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


def dry_runs(tmp: Path, scenarios: dict[str, tuple], size: Size) -> dict[str, list]:
    """`size.repeats` dry runs of each scenario (its Snakefile and config), interleaved:
    one of each in turn; plain, or `-n --quiet rules` where they also give the job counts."""
    args = ["-n", "--quiet", *([] if size.count_apart else ["rules"])]
    runs: dict[str, list] = {name: [] for name in scenarios}
    for _ in range(size.repeats):
        for name, (snakefile, config) in scenarios.items():
            runs[name].append(snakemake(tmp, config, *args, snakefile=snakefile))
    return runs


def figures(tmp: Path, scenario: tuple, runs: list, rows: pd.DataFrame, size: Size) -> dict:
    """The median dry-run time, CPU time, peak memory of `runs` of `scenario` (its
    Snakefile and config; a study of instances `rows`), and the jobs its dry run would
    run, by rule."""
    snakefile, config = scenario
    counted = runs[-1]  # its own `-n --quiet rules` run at full size
    if size.count_apart:
        counted = snakemake(tmp, config, "-n", "--quiet", "rules", snakefile=snakefile)
    output = counted[-1]
    stats = job_stats(output)
    pairs, model_tasks = size.models * len(rows), size.models * rows["task"].nunique()
    return {
        "instances": len(rows),
        "models": size.models,
        "jobs": sum(stats.values()),
        "jobs_by_rule": stats,
        "jobs_per_model_instance": round(sum(n for n in stats.values() if n >= pairs) / pairs, 2),
        "jobs_per_model_task": round(
            sum(n for n in stats.values() if n == model_tasks) / model_tasks, 2
        ),
        "dry_run_s": round(statistics.median(r[0] for r in runs), 2),
        "dry_run_runs_s": [round(r[0], 2) for r in runs],
        "cpu_s": round(statistics.median(r[1] for r in runs), 2),
        "cpu_runs_s": [round(r[1], 2) for r in runs],
        "peak_mb": round(max(r[2] for r in runs), 1),
        "nothing_to_do": "Nothing to be done" in output,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, help="dry runs per scenario (default 3)")
    parser.add_argument("--smoke", action="store_true", help="the smallest size, 1 repeat")
    args = parser.parse_args()
    size = SMOKE if args.smoke else PAPER
    size = dataclasses.replace(size, repeats=args.repeats or size.repeats)
    repeats = size.repeats
    results: dict = {}
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="dag_scale_") as name:
        tmp = Path(name)
        build_benchmark(tmp / "bench_data", size)
        configs = {subset: write_config(tmp, subset, size) for subset in ("half", "full")}
        tables = {subset: selected(config) for subset, config in configs.items()}
        project = {subset: (REPO / "Snakefile", config) for subset, config in configs.items()}
        scenarios = {
            "half": project["half"],
            "bare": (write_bare(tmp, tables["half"]), None),
            "full": project["full"],
        }
        runs = dry_runs(tmp, scenarios, size)
        for name, scenario in scenarios.items():
            rows = tables["full" if name == "full" else "half"]
            results[name] = figures(tmp, scenario, runs[name], rows, size)
        start = time.perf_counter()
        n_files = create_all_outputs(tmp, configs["half"])
        setup_s = round(time.perf_counter() - start)
        done = dry_runs(tmp, {"half_done": project["half"]}, size)["half_done"]
        results["half_done"] = figures(tmp, project["half"], done, tables["half"], size)
        results["half_done"].update(outputs=n_files, setup_s=setup_s)
    if not results["half_done"]["nothing_to_do"]:
        raise RuntimeError("every output was created, yet the half_done dry run has work")

    load_after = os.getloadavg()[0]
    half, bare = results["half"], results["bare"]
    ratio = round(half["cpu_s"] / bare["cpu_s"], 2)
    print(f"{'scenario':<10}" + "".join(f"{h:>11}" for h in COLUMNS))
    for scenario, f in results.items():
        print(f"{scenario:<10}" + "".join(f"{f[k]:>11}" for k in COLUMNS.values()))
    print(f"median of {repeats} dry runs (half, bare, full interleaved); jobs: left to run")
    print(
        f"jobs: half {half['jobs']}, bare {bare['jobs']}"
        + " (differ!)" * (half["jobs_by_rule"] != bare["jobs_by_rule"])
    )
    print(f"CPU s: half {half['cpu_s']}, bare {bare['cpu_s']}: {ratio}x (goal <= {GOAL_RATIO})")
    print(f"load average before/after: {load:.2f}/{load_after:.2f} on {os.cpu_count()} CPUs")
    results.update(
        half_bare_cpu_ratio=ratio,
        goal_ratio=GOAL_RATIO,
        within_goal=ratio <= GOAL_RATIO,
        same_jobs=half["jobs_by_rule"] == bare["jobs_by_rule"],
        size="smoke" if args.smoke else "paper",
        cpus=os.cpu_count(),
        load_avg_before=round(load, 2),
        load_avg_after=round(load_after, 2),
    )
    print(json.dumps(results))


if __name__ == "__main__":
    main()
