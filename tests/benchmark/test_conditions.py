"""Input conditions and seeds through the reader and Snakemake's dry run: every problem in
a condition's folders named by condition and instance before any job, and the jobs that
multiply (generate, judge, label_transitions) and those that do not."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys

from PIL import Image

from tests.support.workflow import EXAMPLES, REPO, default_config, snakemake

MAKE = REPO / "tasks" / "make_conditions.py"
TASKS = ["maze_square", "sorting"]


def make(kind, out, *args):
    command = [sys.executable, str(MAKE), kind, str(EXAMPLES), str(out), *args]
    subprocess.run(command, check=True, capture_output=True, text=True)


def jobs(stdout: str) -> dict[str, int]:
    return {
        k: int(v) for k, v in re.findall(r"^(\w+)\s+(\d+)$", stdout.split("Job stats:")[1], re.M)
    }


def conditions_config(tmp_path, **benchmark):
    lineart, oracle = tmp_path / "lineart", tmp_path / "oracle"
    make("line-art", lineart, "--tasks", *TASKS)
    solutions = tmp_path / "solutions.yaml"
    solutions.write_text(
        "".join(
            f"{task}_lv{lv}_00{n}: [Look at the image., Solve the {task} step by step.]\n"
            for task in TASKS
            for lv in (1, 2, 3)
            for n in (1, 2)
        )
    )
    make("oracle", oracle, "--tasks", *TASKS, "--solutions", str(solutions))
    config = default_config(tmp_path, tasks=TASKS, **benchmark)
    config["conditions"] = {
        "lineart": {"images": str(lineart)},
        "oracle": {"prompts": str(oracle), "tasks": ["sorting"]},
    }
    return config


def test_two_models_under_two_conditions_multiply_only_the_per_video_jobs(tmp_path, monkeypatch):
    monkeypatch.setenv("GEMINI_API_KEY", "not-used-by-a-dry-run")
    config = conditions_config(tmp_path)
    config["models"] = ["tiny_wan22", "tiny_wan21"]
    result = snakemake(tmp_path, config, "-n")
    assert result.returncode == 0, result.stdout[-3000:]
    counts = jobs(result.stdout)
    # half of 2 tasks x 3 levels x 2 ids = 6 instances; lineart covers 6, oracle 3 (sorting)
    assert counts["generate"] == 2 * (6 + 6 + 3)
    assert counts["judge"] == counts["label_transitions"] == 2 * (2 + 2 + 1)
    for rule in ("tables", "plots", "gallery", "select_instances"):
        assert counts[rule] == 1
    assert counts["contact_sheet"] == counts["export_official"] == 2
    generated = re.findall(r"rule generate:\n(?:.*\n)*?\s+output: (\S+)/video\.mp4", result.stdout)
    keys = {path.split("/results/")[1].split("/")[0] for path in generated}
    assert keys == {
        f"{m}{c}" for m in ("tiny_wan22", "tiny_wan21") for c in ("", "@lineart", "@oracle")
    }


def test_seeds_multiply_generate_judge_and_transitions_only(tmp_path, monkeypatch):
    monkeypatch.setenv("GEMINI_API_KEY", "not-used-by-a-dry-run")
    config = default_config(tmp_path, tasks=TASKS)
    plain = jobs(snakemake(tmp_path, config, "-n", "--quiet", "rules").stdout)
    config["seeds"] = [0, 1]  # 0: the registry's (plain paths), 1: tiny_wan22@seed1
    result = snakemake(tmp_path, config, "-n", "--quiet", "rules")
    assert result.returncode == 0, result.stdout[-3000:]
    seeded = jobs(result.stdout)
    assert plain.pop("total") == 19
    for rule, count in plain.items():  # prepare_frames: the judge stage's frames
        factor = 2 if rule in ("generate", "prepare_frames", "judge", "label_transitions") else 1
        assert seeded[rule] == factor * count, rule
    assert seeded["total"] == 19 + 6 + 2 + 2 + 2


def test_a_broken_condition_folder_is_reported_by_condition_and_id_before_any_job(tmp_path):
    config = conditions_config(tmp_path, subset="full")
    lineart, oracle = tmp_path / "lineart", tmp_path / "oracle"
    images = lineart / "maze_square" / "input_image"
    data = (images / "lv1" / "maze_square_lv1_001.png").read_bytes()
    (images / "lv1" / "maze_square_lv1_001.png").write_bytes(data[: len(data) // 2])  # truncated
    Image.new("RGB", (64, 64)).save(images / "lv2" / "maze_square_lv2_002.png")  # not 16:9
    (images / "lv3" / "maze_square_lv3_001.png").unlink()
    (images / "lv3" / "maze_square_lv3_002.png").unlink()
    (images / "lv3" / "maze_square_lv3_002.png").symlink_to(tmp_path / "gone.png")  # dangling
    (oracle / "sorting_lv2_001.txt").unlink()
    spec = tmp_path / "spec"
    shutil.copytree(EXAMPLES / "sorting" / "judge_spec", spec / "sorting" / "judge_spec")
    (spec / "sorting" / "judge_spec" / "_completeness_judge.txt").unlink()
    config["conditions"]["oracle"]["judge_spec"] = str(spec)
    config["conditions"]["oracle"]["instances"] = [
        "sorting_lv1_001",
        "sorting_lv2_001",
        "nope_lv1_001",
    ]
    result = snakemake(tmp_path, config)
    assert result.returncode != 0
    lines = result.stdout.splitlines()
    expected = [
        ("conditions.lineart: maze_square_lv1_001:", "unreadable image"),
        ("conditions.lineart: maze_square_lv2_002:", "64x64, not 16:9"),
        ("conditions.lineart: maze_square_lv3_001:", "missing image"),
        ("conditions.lineart: maze_square_lv3_002:", "image is a symbolic link to "),
        ("conditions.oracle: sorting_lv2_001:", "missing prompt"),
        ("conditions.oracle: sorting_lv1_001:", "missing tier standard"),
        ("conditions.oracle: nope_lv1_001:", "not one of the run's selected instances"),
    ]
    for name, problem in expected:
        assert any(name in line and problem in line for line in lines), (name, problem, lines)
    assert "problem(s) found before scheduling any job" in result.stdout
    assert not (tmp_path / "results").exists()
