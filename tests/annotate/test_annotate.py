"""The annotation page, driven in headless Chromium (Selenium, Debian's chromedriver) through
the documented command, and the sample and label store behind it."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import yaml

from tests.support.workflow import REPO, default_config
from vgi_models.video import checkpoint_name, write_video
from workflow_scripts.annotate.items import Item, LabelStore, load_run, stratified
from workflow_scripts.common import layout
from workflow_scripts.transitions.settings import load_transitions

MODELS = ["tiny_wan22", "tiny_ltx23"]
INSTANCES = ["sorting_lv1_001", "sorting_lv1_002"]
STEPS = [1, 2, 40]
VLM = {(1, 2): "unrecognizable", (2, 40): "wrong_to_correct"}  # tiny_wan22's transitions.json


@pytest.fixture
def run(tmp_path) -> Path:
    """2 models x 2 instances with checkpoints 1, 2, 40 (9 frames at 8 fps); the VLM labelled
    tiny_wan22's pairs; one pair already labelled by hand (with a column of the user's own)."""
    config = default_config(tmp_path, tasks=["sorting"], levels=[1], subset="full")
    config.update(models=MODELS, denoise={"steps": STEPS, "decode": "x0"})
    config["transitions"] = {"human_labels": str(tmp_path / "labels" / "human.csv")}
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    for model in MODELS:
        for instance in INSTANCES:
            folder = tmp_path / "results" / model / "sorting" / instance
            for step in STEPS:
                pixels = np.full((9, 36, 64, 3), 6 * step, np.uint8)
                write_video(pixels, folder / "denoise" / checkpoint_name(step, "x0"), fps=8)
            pairs = [{"from": a, "to": b, "vlm_label": label} for (a, b), label in VLM.items()]
            if model == "tiny_wan22":
                labels = layout.transitions_file(tmp_path / "results", model, "sorting", instance)
                labels.parent.mkdir(parents=True, exist_ok=True)
                labels.write_text(json.dumps({"pairs": pairs}))
    (tmp_path / "labels").mkdir()
    (tmp_path / "labels" / "human.csv").write_text(
        "model,instance,from,to,label,note\ntiny_wan22,sorting_lv1_001,1,2,stable,blurry\n"
    )
    return tmp_path


class Server:
    """`python -m workflow_scripts.annotate` as documented, in `workdir`; `url` as printed."""

    def __init__(self, workdir: Path, *args: str) -> None:
        command = [sys.executable, "-m", "workflow_scripts.annotate", "--configfile"]
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        command += ["config.yaml", *args]
        self.process = subprocess.Popen(
            command, cwd=workdir, env=env, stdout=subprocess.PIPE, text=True
        )
        self.url = self.process.stdout.readline().strip()
        assert self.url.startswith("http://127.0.0.1:"), self.url
        self.base, _, token = self.url.rstrip("/").partition("/?token=")
        self.token = {"X-Token": token}

    def request(self, path: str, body: bytes | None = None, **headers):
        """A request to the API or media at `path`, with the run's token."""
        import urllib.request

        return urllib.request.Request(f"{self.base}/{path}", body, self.token | headers)

    def __enter__(self) -> Server:
        return self

    def __exit__(self, *exc) -> None:
        self.process.terminate()
        self.process.wait(timeout=10)


def wait(condition, timeout: float = 10.0):
    """Poll `condition()` until it is truthy; return its value."""
    end = time.monotonic() + timeout
    while not (value := condition()):
        assert time.monotonic() < end, "timed out"
        time.sleep(0.05)
    return value


def text(driver, element_id: str) -> str:
    return driver.execute_script(f"return document.getElementById('{element_id}').textContent")


def rows(path: Path) -> list[dict]:
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def press(driver, key: str) -> None:
    from selenium.webdriver.common.action_chains import ActionChains

    ActionChains(driver).send_keys(key).perform()


def test_labels_by_click_and_key_are_saved_and_the_vlm_label_shows_only_after(run, browser):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    labels = run / "labels" / "human.csv"
    with Server(run) as server:
        browser.get(server.url)
        # 8 pairs; 1 labelled, so the page opens on the second: tiny_wan22's 2 -> 40
        wait(lambda: "step 2 → 40" in text(browser, "title"))
        assert text(browser, "title") == "tiny_wan22 · sorting_lv1_001 · step 2 → 40"
        assert text(browser, "progress") == "1 of 8 labelled · pair 2 of 8"
        _, study, _ = load_run([run / "config.yaml"])
        task = study.instances.loc["sorting_lv1_001"]
        assert text(browser, "prompt") == task["prompt"] and text(browser, "goal") == task["goal"]
        shown = browser.find_elements(By.CSS_SELECTOR, "#checklist li")
        assert [li.text for li in shown] == list(task["checklist"])

        # No anchoring: the VLM's label is nowhere on the page, nor in what it was sent.
        assert text(browser, "reveal") == ""
        assert browser.execute_script("return items.map((item) => item.vlm_label)") == [
            "unrecognizable",  # the pair labelled by hand
            *[None] * 7,
        ]
        assert "wrong_to_correct" not in browser.find_element(By.TAG_NAME, "body").text.replace(
            "wrong to correct", ""
        )

        # Both videos and the input image load; the right video follows the left one.
        media = "return [from, to].map((v) => [v.readyState, v.duration, v.error])"
        wait(lambda: all(v[0] >= 1 for v in browser.execute_script(media)))
        ready = browser.execute_script(media)
        assert [(d, e) for _, d, e in ready] == [(pytest.approx(9 / 8, abs=0.01), None)] * 2
        assert browser.execute_script("return document.getElementById('image').naturalWidth") > 0
        browser.execute_script("from.pause(); from.currentTime = 0.75")
        wait(lambda: abs(browser.execute_script("return to.currentTime") - 0.75) < 0.05)
        browser.execute_script("from.play()")
        wait(lambda: browser.execute_script("return !to.paused"))
        browser.execute_script("from.pause()")
        wait(lambda: browser.execute_script("return to.paused"))

        # A click labels the pair; its VLM label shows; the page moves to the next one.
        browser.find_element(By.CSS_SELECTOR, 'button[data-label="wrong_to_wrong"]').click()
        wait(lambda: "sorting_lv1_002 · step 1 → 2" in text(browser, "title"))
        assert "you wrong_to_wrong, VLM wrong_to_correct" in text(browser, "saved")
        press(browser, "2")  # stable
        wait(lambda: "sorting_lv1_002 · step 2 → 40" in text(browser, "title"))
        press(browser, Keys.ARROW_LEFT)  # back, and relabel: replaces, never duplicates
        wait(lambda: text(browser, "reveal") == "You: stable · VLM: unrecognizable")
        press(browser, "1")
        wait(lambda: "3 of 8 labelled" in text(browser, "progress"))
        wait(lambda: len(rows(labels)) == 3 and rows(labels)[-1]["label"] == "unrecognizable")

    assert rows(labels) == [
        {"model": "tiny_wan22", "instance": i, "from": a, "to": b, "label": label, "note": note}
        for i, a, b, label, note in [
            ("sorting_lv1_001", "1", "2", "stable", "blurry"),
            ("sorting_lv1_001", "2", "40", "wrong_to_wrong", ""),
            ("sorting_lv1_002", "1", "2", "unrecognizable", ""),
        ]
    ]
    # no temp files; the lock the label stores share
    assert sorted(p.name for p in labels.parent.iterdir()) == ["human.csv", "human.csv.lock"]
    config, study, _ = load_run([run / "config.yaml"])  # what the workflow will read
    human = load_transitions(config, study).human_params("tiny_wan22", ["sorting_lv1_002"])
    labels = {"sorting_lv1_002": [{"from": 1, "to": 2, "label": "unrecognizable"}]}
    assert json.loads(human) == labels  # by instance, for its task's job

    # Work resumes where it stopped: the first pair still without a label.
    with Server(run) as server:
        browser.get(server.url)
        wait(lambda: "sorting_lv1_002 · step 2 → 40" in text(browser, "title"))
        assert text(browser, "progress") == "3 of 8 labelled · pair 4 of 8"


def test_a_sample_is_seeded_and_spread_evenly_over_the_models(tmp_path):
    items = [
        Item(model, "t", f"t_lv1_{n:03d}", pair, tmp_path)
        for model in ("a", "b", "c", "d")
        for n in range(10)
        for pair in [(1, 2), (2, 3)]
    ]
    chosen = stratified(items, 7, seed=0)
    units = {(item.model, item.instance) for item in chosen}
    assert len(chosen) == 2 * len(units) == 14  # every pair of a chosen (model, instance)
    assert sorted(sum(m == model for m, _ in units) for model in "abcd") == [1, 2, 2, 2]
    assert stratified(items, 7, seed=0) == chosen
    assert {stratified(items, 7, seed=s)[0].instance for s in range(5)} != {chosen[0].instance}
    uneven = [item for item in items if item.model != "a" or item.instance < "t_lv1_002"]
    drawn = stratified(uneven, 20, seed=1)
    counts = {m: len({i.instance for i in drawn if i.model == m}) for m in "abcd"}
    assert counts == {"a": 2, "b": 6, "c": 6, "d": 6}
    assert stratified(items, 500, seed=0) == items


def test_a_first_start_and_the_api_refusing_bad_labels_and_serving_byte_ranges(run):
    import urllib.error
    import urllib.request

    labels = run / "labels" / "human.csv"
    labels.unlink()  # transitions.human_labels names a file not written yet: the first start
    with Server(run, "--sample", "1", "--seed", "3") as server:
        state = json.load(urllib.request.urlopen(server.request("api/items")))
        assert len(state["items"]) == 2 and len({i["model"] for i in state["items"]}) == 1
        for body in ({"index": 0, "label": "maybe"}, {"index": 2, "label": "stable"}):
            request = server.request("api/label", json.dumps(body).encode())
            with pytest.raises(urllib.error.HTTPError) as error:
                urllib.request.urlopen(request)
            assert error.value.code == 400
        partial = server.request("media/0/to", Range="bytes=4-")
        with urllib.request.urlopen(partial) as reply:
            assert reply.status == 206 and reply.headers["Content-Range"].startswith("bytes 4-")
    assert not labels.exists()  # nothing labelled, nothing written
    assert LabelStore(labels).labels() == {}


def label(server: Server, index: int, value: str) -> dict:
    import urllib.request

    body = json.dumps({"index": index, "label": value}).encode()
    with urllib.request.urlopen(server.request("api/label", body)) as reply:
        return json.load(reply)


def test_two_servers_and_an_edit_on_one_labels_file_keep_every_label(run):
    labels = run / "labels" / "human.csv"
    with Server(run) as first, Server(run) as second:
        label(first, 1, "stable")
        label(second, 2, "wrong_to_wrong")
        with open(labels, "a", newline="", encoding="utf-8") as sheet:  # a hand edit
            csv.writer(sheet).writerow(["tiny_ltx23", "sorting_lv1_002", 2, 40, "stable", "x"])
        label(first, 3, "correct_to_wrong")
        label(second, 1, "unrecognizable")  # a relabel replaces, never duplicates
    kept = {(r["model"], r["instance"], r["from"], r["to"]): r["label"] for r in rows(labels)}
    assert len(rows(labels)) == len(kept) == 5
    assert kept[("tiny_wan22", "sorting_lv1_001", "1", "2")] == "stable"  # the one before
    assert kept[("tiny_ltx23", "sorting_lv1_002", "2", "40")] == "stable"  # the edit's
    assert sorted(kept.values()) == sorted(
        ["stable", "stable", "wrong_to_wrong", "correct_to_wrong", "unrecognizable"]
    )


@pytest.mark.parametrize(
    "refused",
    [
        {"token": ""},  # another local user, who has not the printed URL
        {"Origin": "http://evil.example"},  # a foreign page, a simple text/plain POST
        {"Host": "rebound.example:80"},  # a DNS name rebound to 127.0.0.1
    ],
    ids=["no token", "foreign Origin", "foreign Host"],
)
def test_the_server_answers_only_its_own_page(run, refused):
    import urllib.error
    import urllib.request

    labels = run / "labels" / "human.csv"
    before = labels.read_text()
    with Server(run) as server:
        headers = {k: v for k, v in refused.items() if k != "token"}
        token = {"X-Token": refused.get("token", server.token["X-Token"])}
        body = json.dumps({"index": 1, "label": "stable"}).encode()
        for path, data in (("api/items", None), ("api/label", body), ("media/0/to", None)):
            request = urllib.request.Request(f"{server.base}/{path}", data, token | headers)
            request.add_header("Content-Type", "text/plain")
            with pytest.raises(urllib.error.HTTPError) as error:
                urllib.request.urlopen(request)
            assert error.value.code == 403, path
        page = urllib.request.Request(server.base + "/", headers=headers)
        with pytest.raises(urllib.error.HTTPError) as error:
            urllib.request.urlopen(page)  # the page itself only at the printed URL
        assert error.value.code == 403
        with urllib.request.urlopen(server.url) as reply:
            assert reply.status == 200  # as printed
        oversized = server.request("api/label", b"{}", **{"Content-Length": "999999"})
        with pytest.raises(urllib.error.HTTPError) as error:
            urllib.request.urlopen(oversized)
        assert error.value.code == 400
    assert labels.read_text() == before
