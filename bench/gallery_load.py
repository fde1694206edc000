"""How fast the gallery's index opens at study size: a fake study, the index's load in Chromium.

Builds, in a temporary folder (or `--out`), a study of `--instances` (default 405, the
paper's half subset: 27 tasks x 3 levels x 5) x `--models` (default 5) runs: an input
image per instance, and per run a last-frame thumbnail and a checkpoint strip made with
the gallery's own code and settings (workflow_scripts.gallery.sheets), and a verdict
drawn with a fixed seed (strict success, partial, failed, judge error, failed generation,
not judged). Then writes the gallery with `write_gallery` (the rule's code) and opens
`gallery/index.html` from disk in headless Chromium `--repeats` times (a fresh browser
each: nothing cached), reading the page's navigation timing, the images fetched by the
load event (thumbnails load lazily), and how long one filter change takes.

    python bench/gallery_load.py [--instances 405] [--models 5] [--repeats 3] [--out DIR] [--smoke]

Prints a table, then (last line) one JSON object with the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

from PIL import Image, ImageDraw

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from workflow_scripts.common import layout  # noqa: E402
from workflow_scripts.gallery.pages import write_gallery  # noqa: E402
from workflow_scripts.gallery.runs import JPEG, Run  # noqa: E402
from workflow_scripts.gallery.sheets import strip  # noqa: E402

STEPS = 7  # the default checkpoints (1, 2, 3, 4, 10, 20, 40), then the final
VERDICTS = {"solved": 0.15, "partial": 0.35, "failed": 0.3, "judge_error": 0.05}
VERDICTS |= {"refused": 0.03, "unjudged": 0.12}
TIMING = """
const nav = performance.getEntriesByType('navigation')[0];
const images = [...document.images];
return {dom_content_loaded_ms: nav.domContentLoadedEventEnd, load_ms: nav.loadEventEnd,
        html_bytes: nav.transferSize || nav.decodedBodySize,
        images: images.length, images_loaded: images.filter((i) => i.naturalWidth > 0).length};
"""
FILTER = """
const select = document.getElementById('verdict');
const start = performance.now();
select.value = 'error';
select.dispatchEvent(new Event('change', {bubbles: true}));
document.body.offsetHeight;  // layout included
const ms = performance.now() - start;
const shown = document.getElementById('shown').textContent;
select.value = '';
select.dispatchEvent(new Event('change', {bubbles: true}));
return {filter_ms: ms, shown};
"""


def frame(seed: int, size=(160, 90)) -> Image.Image:
    """A small picture with a few shapes (not flat: JPEG has work to do)."""
    rng = random.Random(seed)
    image = Image.new("RGB", size, tuple(rng.randrange(256) for _ in range(3)))
    draw = ImageDraw.Draw(image)
    for _ in range(6):
        x, y = rng.randrange(size[0]), rng.randrange(size[1])
        box = (x, y, x + rng.randrange(5, 40), y + rng.randrange(5, 30))
        draw.rectangle(box, fill=tuple(rng.randrange(256) for _ in range(3)))
    return image


def build(out: Path, instances: int, models: int, seed: int = 0) -> tuple[list[Run], dict]:
    """The fake study under `out/results`: inputs, thumbnails, verdicts; its runs and tasks."""
    rng = random.Random(seed)
    outdir, names = out / "results", [f"model_{k}" for k in range(models)]
    tasks, runs = {}, []
    for n in range(instances):
        task, level, number = f"task_{n // 15:02d}", n % 15 // 5 + 1, n % 5 + 1
        instance = f"{task}_lv{level}_{number:03d}"
        image = out / "inputs" / f"{instance}.png"
        image.parent.mkdir(parents=True, exist_ok=True)
        frame(n, (320, 180)).save(image)
        tasks[instance] = {"image": image, "level": level, "prompt": "p", "goal": "g"}
        tasks[instance]["checklist"] = ["an item", "another"]
        for k, model in enumerate(names):
            run = Run(outdir, model, task, instance)
            runs.append(run)
            kind = rng.choices(list(VERDICTS), list(VERDICTS.values()))[0]
            run.folder.mkdir(parents=True, exist_ok=True)
            status = {"status": "error", "reason": "refused"} if kind == "refused" else {}
            (run.folder / "generation.json").write_text(json.dumps(status))
            if kind == "refused":
                continue
            run.thumbnail.parent.mkdir(parents=True, exist_ok=True)
            last = frame(1000 + n * models + k)
            last.save(run.thumbnail, **JPEG)
            strip([frame(k) for k in range(STEPS)] + [last]).save(run.strip, **JPEG)
            if kind != "unjudged":
                score_of(run, kind, rng)
    return runs, tasks


def score_of(run: Run, kind: str, rng: random.Random) -> None:
    if kind == "judge_error":
        score = {"status": "error", "reason": "blocked reply"}
    else:
        final = {"solved": 1.0, "failed": 0.0}.get(kind, round(rng.uniform(0.1, 0.9), 3))
        score = {"status": "ok", "completeness": 1.0, "rubric": final, "final": final}
        score |= {"strict_success": kind == "solved", "violations": [0, 0]}
    path = layout.judged(run.outdir, run.model, run.task, run.instance) / "score.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(score))


def cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def load(index: Path, repeats: int) -> list[dict]:
    """Each repeat: a fresh headless Chromium opens the index; its timings."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium") or shutil.which("chromium-browser")
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1400,1000"):
        options.add_argument(flag)
    found = []
    for _ in range(repeats):
        driver = webdriver.Chrome(options=options, service=Service(shutil.which("chromedriver")))
        try:
            driver.get(index.as_uri())  # returns once the load event has fired
            found.append(driver.execute_script(TIMING) | driver.execute_script(FILTER))
        finally:
            driver.quit()
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--instances", type=int, default=405)
    parser.add_argument("--models", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, help="keep the study here (default: a temp dir)")
    parser.add_argument("--smoke", action="store_true", help="CI: 15 instances, 2 models, 1 load")
    args = parser.parse_args()
    if args.smoke:  # the sizes shrink; flags given explicitly still win
        parser.set_defaults(instances=15, models=2, repeats=1)
        args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="gallery_load-") as temporary:
        out = args.out or Path(temporary)
        start = cpu()
        runs, tasks = build(out, args.instances, args.models)
        made = cpu() - start
        start = cpu()
        write_gallery(runs, out / "results" / "gallery", tasks)
        written = cpu() - start
        index = out / "results" / "gallery" / "index.html"
        thumbs = [p.stat().st_size for p in (out / "results" / "gallery").glob("*/thumbs/*.jpg")]
        index_kb = index.stat().st_size / 1024
        loads = load(index, args.repeats)
    figures = {
        "instances": args.instances,
        "models": args.models,
        "thumbnail_files": len(thumbs),
        "thumbnail_kb_mean": round(sum(thumbs) / len(thumbs) / 1024, 2),
        "index_kb": round(index_kb, 1),
        "fake_study_cpu_s": round(made, 2),
        "write_gallery_cpu_s": round(written, 2),
        "repeats": args.repeats,
        "load_average_1min": round(os.getloadavg()[0], 2),  # wall times below: a busy host's
    }
    for key in ("dom_content_loaded_ms", "load_ms", "filter_ms"):
        figures[f"{key}_median"] = round(statistics.median(r[key] for r in loads), 1)
        figures[f"{key}_max"] = round(max(r[key] for r in loads), 1)
    figures |= {k: loads[0][k] for k in ("images", "images_loaded", "shown")}
    print(f"gallery index: {args.instances} instances x {args.models} models (fake study)")
    for key, value in figures.items():
        print(f"  {key:<28} {value}")
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
