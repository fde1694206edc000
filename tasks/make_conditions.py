"""Make the folders of two input conditions (paper D.2) from a benchmark in the official layout.

python tasks/make_conditions.py line-art <root> <out> [--tasks T ...]
    <out>/<task>/input_image/lv<N>/<instance>.png: each input image as line art (a
    PIL edge filter: dark lines on white, same size, so still 16:9), for a
    condition's `images: <out>`.

python tasks/make_conditions.py oracle <root> <out> [--solutions FILE] [--tasks T ...]
    <out>/<instance>.txt: the instance's concrete solution, then the task's original
    prompt (D.2.1), for a condition's `prompts: <out>`. The solution is the FILE's
    entry for the instance (YAML or JSON {instance: text or [step, ...]}), else the
    release's own reference for it (`_raw/lv<N>/<instance>_gt_desc.json`, then the
    rubric entry's `answer`). An instance with neither is left out and named on
    stderr; a condition covering it is then reported before any job.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import yaml
from PIL import Image, ImageFilter, ImageOps

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from vgi_models.input_image import load_rgb  # noqa: E402
from workflow_scripts.benchmark import rubric  # noqa: E402
from workflow_scripts.benchmark.instances import IMAGE_SUFFIXES  # noqa: E402


def input_images(root: Path, tasks: list[str] | None):
    """(task, level folder name, image path) of every instance image (no `_gt` ones)."""
    for task_dir in sorted(p for p in root.iterdir() if p.is_dir()):
        if tasks and task_dir.name not in tasks:
            continue
        for level in sorted((task_dir / "input_image").glob("lv*")):
            for path in sorted(level.iterdir()):
                if path.suffix.lower() in IMAGE_SUFFIXES and not path.stem.endswith("_gt"):
                    yield task_dir.name, level.name, path


def line_art(image: Image.Image) -> Image.Image:
    """Dark edges on white: grey, a light blur, the edge filter, inverted, thresholded."""
    edges = image.convert("L").filter(ImageFilter.SMOOTH).filter(ImageFilter.FIND_EDGES)
    edges = ImageOps.autocontrast(edges)
    return ImageOps.invert(edges.point(lambda v: 255 if v > 40 else 0)).convert("RGB")


def make_line_art(root: Path, out: Path, tasks: list[str] | None) -> int:
    count = 0
    for task, level, path in input_images(root, tasks):
        target = out / task / "input_image" / level / f"{path.stem}.png"
        target.parent.mkdir(parents=True, exist_ok=True)
        line_art(load_rgb(path)).save(target)  # as the models see it (16 bits, alpha)
        count += 1
    return count


def _reference(root: Path, task: str, level: str, instance: str) -> str | None:
    """The release's reference solution of an instance: its `_gt_desc`, else its rubric
    entry's `answer`."""
    desc = root / task / "_raw" / level / f"{instance}_gt_desc.json"
    if desc.is_file():
        return rubric.as_text(rubric.read_json(desc)) or None
    path = root / task / "judge_spec" / f"_judge_rubric_{task}.json"
    if not path.is_file():
        return None
    _, lv, id_ = instance.rsplit("_", 2)
    entry = rubric.select(rubric.entries(rubric.read_json(path)), task, int(lv[2:]), id_)
    answer = (entry or {}).get("answer")
    return None if answer is None else rubric.as_text(answer)


def oracle_prompt(solution, prompt: str) -> str:
    """The solution as numbered steps (a list) or as it is, then the original rules."""
    if isinstance(solution, list):
        solution = "\n".join(f"{n}. {step}" for n, step in enumerate(solution, 1))
    return f"Solution, to carry out exactly:\n{solution.strip()}\n\nRules:\n{prompt.strip()}\n"


def make_oracle(root: Path, out: Path, solutions: dict, tasks: list[str] | None) -> int:
    out.mkdir(parents=True, exist_ok=True)
    count, left_out = 0, []
    for task, level, path in input_images(root, tasks):
        instance = path.stem
        solution = solutions.get(instance) or _reference(root, task, level, instance)
        prompt_path = root / task / "prompt" / "video_gen_prompt" / f"{task}.txt"
        if not solution or not prompt_path.is_file():
            left_out.append(instance)
            continue
        prompt = prompt_path.read_text(encoding="utf-8-sig")
        (out / f"{instance}.txt").write_text(oracle_prompt(solution, prompt), encoding="utf-8")
        count += 1
    if left_out:
        print(f"no solution (left out): {' '.join(left_out)}", file=sys.stderr)
    return count


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kind", choices=["line-art", "oracle"])
    parser.add_argument("root", type=Path, help="a benchmark in the official layout")
    parser.add_argument("out", type=Path)
    parser.add_argument("--tasks", nargs="+")
    parser.add_argument("--solutions", type=Path, help="oracle: {instance: solution}")
    args = parser.parse_args(argv)
    if args.kind == "line-art":
        count = make_line_art(args.root, args.out, args.tasks)
    else:
        solutions = yaml.safe_load(args.solutions.read_text()) if args.solutions else {}
        count = make_oracle(args.root, args.out, solutions or {}, args.tasks)
    print(f"{count} {args.kind} files under {args.out}")


if __name__ == "__main__":
    main()
