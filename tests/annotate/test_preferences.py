"""The preference page in headless Chromium through the documented command: two
annotators rank triplets of four models' videos (made elsewhere) judged by the main judge
and two variants on FakeVLM, one triplet skipped, and rule judge_reliability turns the
rankings into pairs and tables; the draw and the assignment behind the page."""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from tests.aggregate.test_reliability_workflow import KEY, judged_study
from tests.annotate.test_annotate import press, text, wait
from tests.support.shared import copy_of
from tests.support.workflow import REPO, default_config, snakemake
from vgi_models.video import write_video
from workflow_scripts.annotate.items import load_run
from workflow_scripts.annotate.preferences import Triplet, assigned, draw


class Server:
    """`python -m workflow_scripts.annotate preferences` as documented; `url` as printed."""

    def __init__(self, workdir: Path, *args: str) -> None:
        command = [sys.executable, "-m", "workflow_scripts.annotate", "preferences"]
        command += ["--configfile", "config.yaml", *args]
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        self.process = subprocess.Popen(
            command, cwd=workdir, env=env, stdout=subprocess.PIPE, text=True
        )
        self.url = self.process.stdout.readline().strip()
        assert self.url.startswith("http://127.0.0.1:"), self.url
        self.summary = self.process.stdout.readline().strip()

    def __enter__(self) -> Server:
        return self

    def __exit__(self, *exc) -> None:
        self.process.terminate()
        self.process.wait(timeout=10)


def rows(path: Path) -> list[dict]:
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


@pytest.fixture(scope="module")
def judged(tmp_path_factory):
    """A copy of the session's judged study (four models' videos made elsewhere, judged by
    main and two variants: tests/aggregate/test_reliability_workflow.py), its rankings to
    come from the page; the config the page reads."""
    tmp_path = copy_of(judged_study(tmp_path_factory), tmp_path_factory.mktemp("pref") / "study")
    config = yaml.safe_load((tmp_path / "config.yaml").read_text(encoding="utf-8"))
    config["judge_reliability"] = {"rankings": str(tmp_path / "rankings")}
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    return tmp_path, config


def ranks_as_shown(browser):
    return browser.execute_script("return items.map((item) => item.ranks)")


def test_two_annotators_rank_in_the_browser_and_the_rule_writes_the_tables(
    judged, browser, monkeypatch
):
    from selenium.webdriver.common.by import By

    tmp_path, config = judged
    args = ["--triplets", "3", "--annotators", "ann1,ann2", "--per-triplet", "2"]
    ann1 = tmp_path / "rankings" / "ann1.csv"
    with Server(tmp_path, "--annotator", "ann1", *args) as server:
        assert (
            server.summary == f"3 triplets, 0 done; rankings go to {tmp_path / 'rankings/ann1.csv'}"
        )
        browser.get(server.url)
        wait(lambda: text(browser, "progress") == "0 of 3 done · triplet 1 of 3")
        items = browser.execute_script("return items")
        instance = items[0]["instance"]
        assert text(browser, "title") == f"{instance} · level 1"
        _, study, _ = load_run([tmp_path / "config.yaml"])
        task = study.instances.loc[instance]
        assert text(browser, "prompt") == task["prompt"] and text(browser, "goal") == task["goal"]
        assert [li.text for li in browser.find_elements(By.CSS_SELECTOR, "#checklist li")] == list(
            task["checklist"]
        )
        # spread over the tasks; no judge score, no model name anywhere the page got
        assert sorted(item["task"] for item in items) == ["clock_running", "maze_square", "sorting"]
        shown = {"task", "level", "instance", "prompt", "goal", "checklist", "done", "skipped"}
        assert all(set(item) == {*shown, "ranks"} for item in items)
        assert "ext_" not in browser.page_source + browser.execute_script(
            "return JSON.stringify(items)"
        )

        # The three videos load and follow the left one.
        media = "return [0, 1, 2].map((k) => document.getElementById('video' + k).readyState)"
        wait(lambda: all(state >= 1 for state in browser.execute_script(media)))
        browser.execute_script("video0.pause(); video0.currentTime = 0.5")
        wait(
            lambda: all(
                abs(browser.execute_script(f"return video{k}.currentTime") - 0.5) < 0.05
                for k in (1, 2)
            )
        )
        browser.execute_script("video0.play()")
        wait(lambda: browser.execute_script("return !video1.paused && !video2.paused"))

        press(browser, "1")  # triplet 1 by keys: 1, 2, 3 left to right
        press(browser, "2")
        press(browser, "3")
        wait(lambda: text(browser, "progress") == "1 of 3 done · triplet 2 of 3")
        for k, rank in enumerate([2, 1, 1]):  # triplet 2 by clicks: a tie
            browser.find_element(
                By.CSS_SELECTOR, f'button[data-video="{k}"][data-rank="{rank}"]'
            ).click()
        browser.find_element(By.ID, "save").click()
        wait(lambda: text(browser, "progress") == "2 of 3 done · triplet 3 of 3")
        assert ranks_as_shown(browser)[:2] == [[1, 2, 3], [2, 1, 1]]

    # A restart resumes at the first triplet not done; then skip it.
    with Server(tmp_path, "--annotator", "ann1", *args) as server:
        assert server.summary.startswith("3 triplets, 2 done")
        browser.get(server.url)
        wait(lambda: text(browser, "progress") == "2 of 3 done · triplet 3 of 3")
        press(browser, "s")
        wait(lambda: text(browser, "progress") == "3 of 3 done · triplet 3 of 3")
        wait(lambda: len(rows(ann1)) == 9)
    assert [r["rank"] for r in rows(ann1)][-3:] == ["", "", ""]  # skipped
    # no temp files; the lock the ranking stores share
    assert sorted(p.name for p in ann1.parent.iterdir()) == ["ann1.csv", "ann1.csv.lock"]

    with Server(tmp_path, "--annotator", "ann2", *args) as server:
        browser.get(server.url)
        wait(lambda: text(browser, "progress") == "0 of 3 done · triplet 1 of 3")
        assert browser.execute_script("return items.map((i) => i.instance)") == [
            item["instance"] for item in items
        ]  # the same draw for both
        for keys, done in (("123", 1), ("212", 2), ("333", 3)):
            for key in keys:
                press(browser, key)
            wait(lambda done=done: text(browser, "progress").startswith(f"{done} of 3 done"))
        wait(lambda: len(rows(tmp_path / "rankings" / "ann2.csv")) == 9)

    # Pairs: triplet 1 three agreed; triplet 2 (2, 1, 1) against (2, 1, 2): videos 1 > 0
    # agreed, 0-2 and 1-2 contradicted; triplet 3 ann2's three ties alone (ann1 skipped).
    monkeypatch.setenv("FAKE_VLM_KEY", KEY)  # nothing is judged again
    result = snakemake(tmp_path, config, "judge_reliability")
    assert result.returncode == 0, result.stdout[-3000:]
    assert "rule judge:" not in result.stdout and "rule judge_variant:" not in result.stdout
    log = (tmp_path / "results/logs/judge_reliability.log").read_text()
    assert "7 preference pairs; dropped: 2 contradicted, 0 on cycles, 0 outside this run" in log
    table = pd.read_csv(tmp_path / "results/tables/judge_reliability.csv")
    assert list(table["judge"]) == ["main", "reversed", "strict_verdict"]
    assert list(table["n_pairs"]) == [7, 7, 7] and list(table["n_strict_pairs"]) == [4, 4, 4]
    by_slice = pd.read_csv(tmp_path / "results/tables/judge_reliability_by_slice.csv")
    assert set(by_slice["slice_kind"]) == {"domain", "skill"}


def test_the_draw_is_seeded_spread_over_tasks_and_levels_and_shared_out(judged):
    tmp_path, config = judged
    _, study, _ = load_run([tmp_path / "config.yaml"])
    triplets = draw(study, config["outdir"], 6, seed=0)
    assert triplets == draw(study, config["outdir"], 6, seed=0)
    assert triplets != draw(study, config["outdir"], 6, seed=1)
    # 3 tasks x 1 level x 2 instances: the first three triplets one per task
    assert sorted(t.task for t in triplets[:3]) == ["clock_running", "maze_square", "sorting"]
    assert len({t.instance for t in triplets}) == 6 and all(
        len(set(t.models)) == 3 for t in triplets
    )
    more = draw(study, config["outdir"], 9, seed=0)  # a second round: other model triplets
    assert len(set(t.key for t in more)) == 9
    fake = [Triplet("t", 1, f"t_lv1_00{i}", ("a", "b", "c")) for i in range(6)]
    pool = ["w", "x", "y", "z"]
    shares = {name: assigned(fake, name, pool, 2) for name in pool}
    assert [len(shares[name]) for name in pool] == [3, 3, 3, 3]  # 6 triplets x 2 over 4
    for triplet in fake:
        assert sum(triplet in shares[name] for name in pool) == 2
    with pytest.raises(ValueError, match="--per-triplet 5"):
        assigned(fake, "w", pool, 5)


# Three frame sizes, one per model (synthetic videos: the page must fit any sizes).
PAGE_MODELS = {"tiny_wan22": (72, 128), "tiny_wan21": (32, 64), "tiny_hunyuan15": (64, 112)}


@pytest.fixture
def three_sizes(tmp_path):
    """Three models' videos of maze_square's level-1 instances, each model its own frame
    size; the config the page reads."""
    config = default_config(tmp_path, tasks=["maze_square"], levels=[1], subset="full")
    config["models"] = list(PAGE_MODELS)
    config["judge_reliability"] = {"rankings": str(tmp_path / "rankings")}
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    for model, (height, width) in PAGE_MODELS.items():
        for instance in ("maze_square_lv1_001", "maze_square_lv1_002"):
            frames = np.full((9, height, width, 3), 120, np.uint8)
            folder = tmp_path / "results" / model / "maze_square" / instance
            write_video(frames, folder / "video.mp4", fps=8)
    return tmp_path


BOXES = """
const box = (element) => element.getBoundingClientRect().toJSON();
const videos = [0, 1, 2].map((k) => document.getElementById('video' + k));
return {
  videos: videos.map(box),
  sizes: videos.map((v) => [v.videoWidth, v.videoHeight]),
  ready: videos.map((v) => v.readyState),
  ranks: [...document.querySelectorAll('.ranks')].map(box),
  buttons: [...document.querySelectorAll('.ranks button, #actions button')].map(box),
  controls: videos[0].controls, view: [innerWidth, innerHeight],
}"""


def test_the_three_players_line_up_with_their_controls_in_view(three_sizes, browser):
    """Videos of three frame sizes: the same box each, side by side, the rank buttons in
    one line, the left player's controls and every button inside the window."""
    with Server(three_sizes, "--annotator", "ann1") as server:
        for width in (1400, 900):
            browser.set_window_size(width, 1100)
            browser.get(server.url)
            found = wait(
                lambda: (f := browser.execute_script(BOXES)) and min(f["ready"]) >= 1 and f
            )
            assert len({tuple(size) for size in found["sizes"]}) == 3, found["sizes"]
            videos, ranks = found["videos"], found["ranks"]
            for key in ("top", "height", "width"):
                assert max(v[key] for v in videos) - min(v[key] for v in videos) < 1, (key, videos)
            assert abs(videos[0]["width"] * 9 / 16 - videos[0]["height"]) < 1
            assert (
                videos[0]["right"] <= videos[1]["left"] and videos[1]["right"] <= videos[2]["left"]
            )
            assert max(r["top"] for r in ranks) - min(r["top"] for r in ranks) < 1, ranks
            view_width, view_height = found["view"]
            assert found["controls"] and videos[0]["bottom"] <= view_height
            for box in [*videos, *found["buttons"]]:
                assert box["left"] >= 0 and box["right"] <= view_width, (width, box)
    browser.set_window_size(1400, 1100)


def test_a_missing_config_file_is_one_line_naming_it_and_help_lists_the_commands(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    command = [sys.executable, "-m", "workflow_scripts.annotate"]
    for args in (["preferences", "--annotator", "ann1"], [], ["transitions"]):
        result = subprocess.run(
            [*command, *args, "--configfile", "my.yaml"],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
        )
        assert result.returncode == 2 and result.stdout == "", result
        assert result.stderr == (
            "python -m workflow_scripts.annotate: error: --configfile my.yaml: no such file\n"
        )
    shown = subprocess.run([*command, "--help"], env=env, capture_output=True, text=True)
    assert shown.returncode == 0
    lines = shown.stdout.splitlines()
    commands = lines[lines.index("commands:") + 1 :]
    assert [line.split()[0] for line in commands] == ["transitions", "preferences"]
    assert all(len(line.split()) > 3 for line in commands)  # a line saying what each does
