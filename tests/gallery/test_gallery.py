"""Contact sheets, the HTML gallery (checked in headless Chromium) and the official export."""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import subprocess
import threading
from html.parser import HTMLParser
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pytest
import yaml
from PIL import Image

from tests.support.workflow import default_config, snakemake
from vgi_models.video import write_video
from workflow_scripts.benchmark.study import load_study
from workflow_scripts.common import layout
from workflow_scripts.gallery.export import link
from workflow_scripts.gallery.index import STUDY_FILES
from workflow_scripts.gallery.pages import write_gallery
from workflow_scripts.gallery.runs import Run, checkpoint_videos
from workflow_scripts.gallery.sheets import (
    GAP,
    HEADER,
    LABEL_WIDTH,
    STRIP_TILE,
    sample_tiles,
    write_pictures,
)

MODELS = ["model_a", "model_b"]
API = "api_model"  # like a commercial API's videos: no checkpoints, one refused, one blocked
INSTANCES = [("maze_square", "maze_square_lv1_001"), ("sorting", "sorting_lv2_003")]
REFUSED = "the provider's safety filter refused the request"
COLORS = {  # one flat colour per video: a sheet's rows can be told apart by their pixels
    "denoise/step01.mp4": (200, 30, 30),
    "denoise/step02.mp4": (30, 200, 30),
    "denoise/step40.mp4": (30, 30, 200),
    "video.mp4": (220, 220, 220),
}
SCORE = {"status": "ok", "completeness": 1.0, "rubric": 0.5, "final": 0.5, "strict_success": False}
SCORE["violations"] = [1, 1]
JUDGED = {  # model_a's maze_square instance: the judge's documents
    "completeness": {"status": "ok", "tier": 2, "reasoning": "the dot reaches the exit"},
    "rubric": {
        "status": "ok",
        "polish": {
            "checklist": [
                {"index": 1, "n_violations": 1, "evidence": "crosses a wall at 0.5 s"},
                {"index": 2, "n_violations": 1, "evidence": "the dot <b>flickers</b>"},
            ]
        },
    },
    "transitions": {
        "status": "ok",
        "pairs": [
            {"from": 1, "to": 2, "label": "unrecognizable", "source": "vlm", "evidence": "noise"},
            {"from": 2, "to": 40, "label": "wrong_to_correct", "source": "human", "evidence": "e"},
        ],
    },
}


def task(instance: str, image: Path) -> dict:
    return {
        "image": image,
        "level": int(instance.split("_lv")[1][0]),
        "prompt": f"Solve {instance}.",
        "goal": f"The goal of {instance}",
        "checklist": ["No wall is crossed.", "The dot stays <round>."],
    }


@pytest.fixture(scope="module")
def outdir(tmp_path_factory, example_image) -> Path:
    """2 models x 2 instances of 9-frame 64x32 videos at 8 fps, one judged and its
    transitions labelled; an API model's refused generation and judge error; gallery built."""
    outdir = tmp_path_factory.mktemp("gallery") / "results"
    runs = [Run(outdir, model, task, instance) for model in MODELS for task, instance in INSTANCES]
    for run in runs:
        for name, color in COLORS.items():
            write_video(np.full((9, 32, 64, 3), color, np.uint8), run.folder / name, fps=8)
    refused, blocked = (Run(outdir, API, task, instance) for task, instance in INSTANCES)
    refused.folder.mkdir(parents=True)
    (refused.folder / "generation.json").write_text(
        json.dumps({"status": "error", "reason": REFUSED})
    )
    write_video(np.full((9, 32, 64, 3), 90, np.uint8), blocked.folder / "video.mp4", fps=8)
    where = layout.judged(outdir, API, blocked.task, blocked.instance)
    where.mkdir(parents=True)
    (where / "score.json").write_text(json.dumps({"status": "error", "reason": "blocked reply"}))
    runs += [refused, blocked]
    first = (outdir, runs[0].model, runs[0].task, runs[0].instance)
    for name, document in {"score": SCORE, **JUDGED}.items():
        path = (
            layout.transitions_file(*first)
            if name == "transitions"
            else layout.judged(*first) / f"{name}.json"
        )
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(document))
    for model in [*MODELS, API]:
        folder = outdir / "gallery" / model
        mine = [run for run in runs if run.model == model]
        write_pictures(mine, folder / "sheets", folder / "thumbs", 6, 160)
    write_gallery(runs, outdir / "gallery", {i: task(i, example_image) for _, i in INSTANCES})
    return outdir


def test_checkpoints_are_in_step_order_x0_before_xt(tmp_path):
    for name in ("step10.mp4", "step02_xt.mp4", "step100.mp4", "step02.mp4", "notes.txt"):
        (tmp_path / name).touch()
    labels = [label for label, _ in checkpoint_videos(tmp_path)]
    assert labels == ["step 2", "step 2 x_t", "step 10", "step 100"]


def test_tiles_span_the_clip_from_first_to_last_frame(outdir):
    tiles, times = sample_tiles(outdir / "model_a/sorting/sorting_lv2_003/video.mp4", 6, 160)
    assert [tile.size for tile in tiles] == [(160, 80)] * 6
    assert times == [0, 2 / 8, 3 / 8, 5 / 8, 6 / 8, 8 / 8]  # frames 0..8, evenly


def test_contact_sheet_has_a_row_per_checkpoint_in_step_order_then_final(outdir):
    sheets = sorted((outdir / "gallery").glob("*/sheets/*.png"))
    assert [f"{p.parts[-3]}/{p.name}" for p in sheets] == [
        f"{API}/sorting_lv2_003.png",  # none of the refused generation
        *(f"{model}/{instance}.png" for model in MODELS for _, instance in INSTANCES),
    ]
    with Image.open(sheets[1]) as sheet:
        assert sheet.size == (LABEL_WIDTH + 6 * (160 + GAP), HEADER + 4 * (80 + GAP))
        for row, color in enumerate(COLORS.values()):
            for column in range(6):
                x = LABEL_WIDTH + column * (160 + GAP) + 80
                pixel = sheet.getpixel((x, HEADER + row * (80 + GAP) + 40))
                assert np.abs(np.subtract(pixel, color)).max() < 20, (row, column, pixel)


def test_thumbnails_are_the_last_frames_small_jpegs_none_for_a_refused_generation(outdir):
    thumbs = outdir / "gallery" / "model_a" / "thumbs"
    assert sorted(p.name for p in thumbs.iterdir()) == [
        f"{instance}{suffix}" for _, instance in INSTANCES for suffix in (".jpg", ".steps.jpg")
    ]
    with Image.open(thumbs / "maze_square_lv1_001.jpg") as thumb:
        assert (thumb.format, thumb.size) == ("JPEG", (160, 80))
        assert np.abs(np.subtract(thumb.getpixel((80, 40)), COLORS["video.mp4"])).max() < 20
    with Image.open(thumbs / "maze_square_lv1_001.steps.jpg") as strip:  # x0 steps, then final
        assert strip.size == (4 * (STRIP_TILE + 1) - 1, STRIP_TILE // 2)
        for k, color in enumerate(COLORS.values()):
            pixel = strip.getpixel((k * (STRIP_TILE + 1) + STRIP_TILE // 2, STRIP_TILE // 4))
            assert np.abs(np.subtract(pixel, color)).max() < 25, (k, pixel)
    api = sorted(p.name for p in (outdir / "gallery" / API / "thumbs").iterdir())
    assert api == ["sorting_lv2_003.jpg"]  # no checkpoints: no strip; refused: nothing


class Links(HTMLParser):
    """Every href and src of a page, and its video sources in order."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.links, self.videos = [], []
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.links += [attrs[key] for key in ("href", "src") if key in attrs]
        if tag == "video":
            self.videos.append(attrs["src"])


def test_pages_link_only_files_that_exist(outdir):
    gallery = outdir / "gallery"
    pages = sorted(gallery.rglob("*.html"))
    assert [p.relative_to(gallery).as_posix() for p in pages] == [
        *(f"{API}/{task}.html" for task, _ in INSTANCES),
        "index.html",
        *(f"{model}/{task}.html" for model in MODELS for task, _ in INSTANCES),
    ]
    for page in pages:
        parsed = Links(page.read_text(encoding="utf-8"))
        assert parsed.links, page
        for href in parsed.links:
            assert not href.startswith(("/", "http")), href
            if page.name == "index.html" and href in STUDY_FILES.values():
                continue  # the run's status and costs: the run writes them, not this job
            path, _, anchor = href.partition("#")
            assert (page.parent / path).resolve().is_file(), (page, href)
            if anchor:  # an instance's section on a task page
                assert f'<section id="{anchor}">' in (page.parent / path).read_text(), href
        if page.name != "index.html":  # per instance: the final video first, then each step
            names = [Path(src).relative_to("../..").as_posix() for src in parsed.videos]
            task = page.stem
            instance = dict(INSTANCES)[task]
            run = f"{page.parent.name}/{task}/{instance}"
            shown = {"maze_square": [], "sorting": ["video.mp4"]} if API in run else None
            expected = shown[task] if shown else ["video.mp4", *list(COLORS)[:-1]]
            assert names == [f"{run}/{name}" for name in expected]


def test_pages_show_the_score_when_judged(outdir):
    judged = (outdir / "gallery/model_a/maze_square.html").read_text(encoding="utf-8")
    assert "final 0.500 (completeness 1.00, rubric 0.500)" in judged
    assert "not judged yet" in (outdir / "gallery/model_b/maze_square.html").read_text()
    index = (outdir / "gallery/index.html").read_text(encoding="utf-8")
    assert "1 of 1 judged · mean final 0.500 · <span>0 errors</span>" in index  # model_a maze
    refused = (outdir / f"gallery/{API}/maze_square.html").read_text(encoding="utf-8")
    assert f'<p class="error">generation failed: {REFUSED}' in refused.replace("&#x27;", "'")


def test_an_instance_shows_its_task_the_verdict_per_item_and_the_pair_labels(outdir):
    page = (outdir / "gallery/model_a/maze_square.html").read_text(encoding="utf-8")
    for shown in [
        "<b>Prompt</b>: Solve maze_square_lv1_001.",
        "<b>Goal</b>: The goal of maze_square_lv1_001",
        "<b>Completeness</b>: tier 2 (score 1): the dot reaches the exit",
        "<td>1</td><td>No wall is crossed.</td><td>1</td><td>crosses a wall at 0.5 s</td>",
        "<td>The dot stays &lt;round&gt;.</td><td>1</td><td>the dot &lt;b&gt;flickers",
        '<img src="../inputs/maze_square_lv1_001.png" alt="input image">',
    ]:
        assert shown in page, shown
    # each pair's label between its two checkpoints: final, step 1, 1->2, step 2, 2->40, step 40
    row = re.findall(r'src="[^"]*/(\w+\.mp4)"|<b>(\d+ → \d+)</b>([a-z_]+) \((\w+)\)', page)
    assert [video or (pair, label, source) for video, pair, label, source in row] == [
        "video.mp4",
        "step01.mp4",
        ("1 → 2", "unrecognizable", "vlm"),
        "step02.mp4",
        ("2 → 40", "wrong_to_correct", "human"),
        "step40.mp4",
    ]
    unjudged = (outdir / "gallery/model_b/maze_square.html").read_text(encoding="utf-8")
    assert "<b>Completeness</b>: not judged yet" in unjudged and "→" not in unjudged
    assert "<td>2</td><td>The dot stays &lt;round&gt;.</td><td>-</td><td>-</td>" in unjudged
    with Image.open(outdir / "gallery/inputs/maze_square_lv1_001.png") as thumbnail:
        assert thumbnail.size == (640, 360)


def test_links_are_relative_and_replace_what_was_there(tmp_path):
    video, path = tmp_path / "run" / "video.mp4", tmp_path / "eval_res" / "m" / "t" / "m_i.mp4"
    video.parent.mkdir()
    video.write_bytes(b"video")
    for _ in range(2):  # a rerun replaces the link
        link(video, path)
    assert path.is_symlink() and os.readlink(path) == "../../../run/video.mp4"
    assert path.samefile(video)


PROBE = b"""<script>
addEventListener("load", async () => {
  const media = [...document.querySelectorAll("video")].map((v) => new Promise((done) => {
    const report = () => done({src: v.src, ready: v.readyState, duration: v.duration,
                               error: v.error && v.error.code});
    if (v.readyState >= 1 || v.error) report();
    else { v.addEventListener("loadedmetadata", report); v.addEventListener("error", report); }
  }));
  const probe = {videos: await Promise.all(media),
                 images: [...document.images].map((i) => ({src: i.src, width: i.naturalWidth}))};
  const out = document.createElement("pre");
  out.id = "probe";
  out.textContent = JSON.stringify(probe);
  document.body.append(out);
});
</script>"""


class ProbingHandler(SimpleHTTPRequestHandler):
    """Serves the outdir; adds PROBE to every HTML page and records each response's status."""

    statuses: list[tuple[str, int]] = []

    def send_head(self):
        path = Path(self.translate_path(self.path))
        if path.suffix != ".html":
            return super().send_head()
        body = path.read_bytes().replace(b"</body>", PROBE + b"</body>")
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_request(self, code="-", size="-"):
        self.statuses.append((self.path, int(code)))


def probe(browser: str, url: str, profile: Path) -> dict:
    """What PROBE found on `url` once loaded in headless Chromium."""
    flags = "--headless --no-sandbox --disable-gpu --disable-quic --no-first-run "
    flags += "--disable-background-networking --disable-component-update --disable-sync"
    command = [browser, *flags.split(), f"--user-data-dir={profile}"]
    command += ["--virtual-time-budget=5000", "--dump-dom", url]
    dom = subprocess.run(command, capture_output=True, text=True, timeout=60).stdout
    start = dom.index('<pre id="probe">') + len('<pre id="probe">')
    return json.loads(dom[start : dom.index("</pre>", start)].replace("&quot;", '"'))


def test_gallery_pages_play_in_headless_chromium(outdir, tmp_path):
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    assert browser, "Chromium is needed: apt-get install -y --no-install-recommends chromium"
    handler = functools.partial(ProbingHandler, directory=str(outdir))
    with ThreadingHTTPServer(("127.0.0.1", 0), handler) as server:
        threading.Thread(target=server.serve_forever, daemon=True).start()
        base = f"http://127.0.0.1:{server.server_address[1]}/gallery"
        for model in MODELS:
            for task, _ in INSTANCES:
                found = probe(browser, f"{base}/{model}/{task}.html", tmp_path / "profile")
                assert len(found["videos"]) == len(COLORS) and len(found["images"]) == 2
                for video in found["videos"]:  # H.264 decoded: metadata read, no error
                    assert video["error"] is None and video["ready"] >= 1, video
                    assert video["duration"] == pytest.approx(9 / 8, abs=0.01), video
                sheet_width = LABEL_WIDTH + 6 * (160 + GAP)
                widths = [image["width"] for image in found["images"]]
                assert widths == [640, sheet_width], found  # input image, contact sheet
        server.shutdown()
    # 304: a file the profile cached on an earlier page (the input images models share)
    failed = [(path, code) for path, code in ProbingHandler.statuses if code not in (200, 304)]
    assert {path for path, _ in failed} <= {"/favicon.ico"}, failed


def test_the_index_shows_thumbnails_verdicts_errors_and_filters_in_chromium(outdir, browser):
    """Opened from disk (no server): every thumbnail loads; the filters hide and show rows,
    columns and task groups; errors are marked with their reason."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    from tests.annotate.test_annotate import wait

    browser.get((outdir / "gallery" / "index.html").as_uri())
    loaded = "return [...document.querySelectorAll('.input, .thumb')].map((i) => i.naturalWidth)"
    wait(lambda: browser.execute_script(loaded) == [160] * 7)  # 2 inputs, 5 last frames
    strips = "return [...document.querySelectorAll('.strip')].map((i) => i.naturalWidth)"

    def shown() -> dict[str, list[str]]:
        """Visible instance rows: their cells' verdict lines (faded ones in brackets)."""
        found = {}
        for row in browser.find_elements(By.CSS_SELECTOR, "tr[data-level]"):
            if row.is_displayed():
                cells = [
                    c for c in row.find_elements(By.CSS_SELECTOR, "td[data-v]") if c.is_displayed()
                ]
                lines = [c.find_element(By.CLASS_NAME, "verdict").text for c in cells]
                dim = ["dim" in c.get_attribute("class") for c in cells]
                found[row.get_attribute("data-task")] = [
                    f"({t})" if d else t for t, d in zip(lines, dim, strict=True)
                ]
        return found

    assert shown() == {
        "maze_square": ["0.50 partial", "not judged yet", f"generation failed: {REFUSED}"],
        "sorting": ["not judged yet", "not judged yet", "judge error: blocked reply"],
    }
    errors = browser.find_elements(By.CSS_SELECTOR, "td.error")
    assert len(errors) == 2 and all(
        e.value_of_css_property("background-color") == "rgba(255, 238, 238, 1)" for e in errors
    )
    assert [e.text for e in browser.find_elements(By.CSS_SELECTOR, "td.error .missing")] == [
        "no video"
    ]
    assert browser.find_element(By.ID, "shown").text == "2 of 2 instances shown"

    Select(browser.find_element(By.ID, "verdict")).select_by_value("error")
    assert shown() == {
        "maze_square": ["(0.50 partial)", "(not judged yet)", f"generation failed: {REFUSED}"],
        "sorting": ["(not judged yet)", "(not judged yet)", "judge error: blocked reply"],
    }
    api_box = browser.find_element(By.CSS_SELECTOR, 'input[data-model="m2"]')
    api_box.click()  # the API model's column hidden: no error left to show
    assert shown() == {} and browser.find_element(By.ID, "shown").text == "0 of 2 instances shown"
    assert not browser.find_element(By.CSS_SELECTOR, "th.m2").is_displayed()
    assert not any(body.is_displayed() for body in browser.find_elements(By.TAG_NAME, "tbody"))
    api_box.click()
    Select(browser.find_element(By.ID, "verdict")).select_by_value("partial")
    assert list(shown()) == ["maze_square"]
    Select(browser.find_element(By.ID, "verdict")).select_by_value("")
    Select(browser.find_element(By.ID, "task")).select_by_value("sorting")
    assert list(shown()) == ["sorting"]
    Select(browser.find_element(By.ID, "task")).select_by_value("")
    Select(browser.find_element(By.ID, "level")).select_by_value("1")
    assert list(shown()) == ["maze_square"]
    Select(browser.find_element(By.ID, "level")).select_by_value("")

    assert browser.execute_script(strips) == [0] * 4  # not shown: not fetched
    browser.find_element(By.ID, "strips").click()
    wait(lambda: browser.execute_script(strips) == [4 * (STRIP_TILE + 1) - 1] * 4)


def test_rules_build_the_gallery_and_the_official_layout(tmp_path, monkeypatch):
    """Through Snakemake, on finished generate outputs: 4 jobs, then nothing left to do."""
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    config = default_config(tmp_path, tasks=["sorting"], levels=[1], subset="full")
    registry = yaml.safe_load(Path(config["model_registry"]).read_text(encoding="utf-8"))
    instances = load_study(config, registry).instances.index
    outdir = tmp_path / "results"
    for instance in instances:
        run = outdir / "tiny_wan22" / "sorting" / instance
        for name in COLORS:
            write_video(np.zeros((9, 32, 64, 3), np.uint8), run / name, fps=8)
        (run / "generation.json").write_text("{}")
    result = snakemake(tmp_path, config, "gallery", "export_official_all")
    assert result.returncode == 0, result.stdout[-3000:]
    lines = result.stdout.splitlines()
    jobs = [
        line.split()[1].rstrip(":") for line in lines if line.startswith(("rule ", "localrule "))
    ]
    assert sorted(jobs) == ["contact_sheet", "export_official", "export_official_all", "gallery"]
    gallery = outdir / "gallery" / "tiny_wan22"
    assert sorted(p.name for p in gallery.iterdir()) == ["sheets", "sorting.html", "thumbs"]
    inputs = sorted(p.name for p in (outdir / "gallery" / "inputs").iterdir())
    assert inputs == sorted(f"{i}{suffix}" for i in instances for suffix in (".jpg", ".png"))
    thumbs = sorted(p.name for p in (gallery / "thumbs").glob("*.jpg"))
    assert thumbs == sorted(f"{i}{suffix}" for i in instances for suffix in (".jpg", ".steps.jpg"))
    page = (gallery / "sorting.html").read_text(encoding="utf-8")
    assert all(f'<section id="{instance}">' in page for instance in instances)
    assert page.count("<b>Prompt</b>: ") == len(instances) and "<th>x_i</th>" in page
    off = "not judged: judge off ($GEMINI_API_KEY is not set)"  # no key: each says why
    assert (
        page.count(f"<p>{off}</p>") == page.count(f"<b>Completeness</b>: {off}") == len(instances)
    )
    index = (outdir / "gallery" / "index.html").read_text(encoding="utf-8")
    assert index.count(f'<div class="verdict">{off}</div>') == len(instances)
    assert '<p id="judge-off">Judge off: $GEMINI_API_KEY is not set.</p>' in index
    assert sorted(p.stem for p in (gallery / "sheets").glob("*.png")) == sorted(instances)
    eval_res = outdir / "eval_res"
    exported = [p.relative_to(eval_res).as_posix() for p in eval_res.rglob("*")]
    assert sorted(p for p in exported if not p.endswith(".snakemake_timestamp")) == [
        "tiny_wan22",
        "tiny_wan22/sorting",
        *sorted(f"tiny_wan22/sorting/tiny_wan22_{instance}.mp4" for instance in instances),
    ]
    for instance in instances:
        video = outdir / "tiny_wan22" / "sorting" / instance / "video.mp4"
        assert (eval_res / "tiny_wan22" / "sorting" / f"tiny_wan22_{instance}.mp4").samefile(video)
    again = snakemake(tmp_path, config, "gallery", "export_official_all", "-n")
    assert "Nothing to be done" in again.stdout, again.stdout[-3000:]


def test_score_text_after_a_failed_completeness_call():
    from workflow_scripts.gallery.pages import score_text

    failed = {**SCORE, "completeness": None, "final": None, "flags": ["completeness: x"]}
    assert score_text(failed, "") == "final n/a (completeness n/a, rubric 0.500)"
    assert score_text(SCORE, "") == "final 0.500 (completeness 1.00, rubric 0.500)"
    assert score_text(None, "not judged yet") == "not judged yet"
