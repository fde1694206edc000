"""`judge.official_prompts`: the video judge's requests built by a checkout's own prompt
builders, read at run time. The checkout here is a stand-in of the official module's
shape in our own words (tests/support/official_checkout), read as a real one is.

The video is 3 s at 16 fps (the protocol tests' clip): completeness sees frames 0, 8, ...,
40; round 1 windows 0..36 and 36..44 at 4 fps; round 1's first window nominates frame 0,
so round 2 sees 0, 2, 4, 6, 8 at 8 fps in one window."""

from __future__ import annotations

import asyncio
import json
import re
import shutil
from types import SimpleNamespace

import numpy as np
import pytest

from tests.support.fake_vlm import FakeVLM, Received
from tests.support.workflow import REPO, first_example
from vgi_models.video import write_video
from workflow_scripts.judge.client import VLMClient
from workflow_scripts.judge.frames import encode_image
from workflow_scripts.judge.jobs import official_prompts
from workflow_scripts.judge.official import OfficialPrompts, load
from workflow_scripts.judge.protocol import judge_video
from workflow_scripts.judge.settings import Protocol, judge_params

CHECKOUT = REPO / "tests" / "support" / "official_checkout"
MODULE = "eval/vlm_judge_utils.py"
LABEL = re.compile(r"@([\d.]+)s #(\d+)")


@pytest.fixture(scope="module")
def video(tmp_path_factory):
    path = tmp_path_factory.mktemp("video") / "video.mp4"
    pixels = np.random.default_rng(0).integers(0, 256, (48, 144, 256, 3), dtype=np.uint8)
    write_video(pixels, path, 16)
    return path


@pytest.fixture(scope="module")
def sorting():
    """The first level-1 sorting instance: a ground-truth image the windows are routed."""
    return first_example("sorting")


def respond(received: Received) -> dict:
    """A judge reading the stand-in's wording: every frame fine, frame 0 nominated by round
    1's first window, no violation, tier 2."""
    fields, head = received.schema["properties"], received.texts[0]
    if "tier" in fields:
        return {"tier": 2, "reasoning": "reached"}
    if "evaluations" in fields:
        shown = [int(m[2]) for text in received.texts if (m := LABEL.fullmatch(text))]
        first = "pass 1 at 4 fps, chunk 1 of" in head
        return {
            "evaluations": [{"frame_indices": shown, "comment": f"fine from {shown[0]}"}],
            "frames_to_inspect_closely": [0] if first else [],
        }
    k = int(re.search(r"checklist of (\d+)", head)[1])
    checklist = [{"index": i, "n_violations": 0, "evidence": "none"} for i in range(1, k + 1)]
    return {"by_range": [], "checklist": checklist, "overall_reasoning": "clean"}


@pytest.fixture
def judge(tmp_path, monkeypatch):
    """judge(checkout) -> (documents, requests), every call cached in one folder."""
    monkeypatch.setenv("FAKE_VLM_KEY", "test-key")

    def run(checkout, video, instance):
        with FakeVLM(respond) as fake:
            config = {"model": "fake-model", "base_url": fake.url, "api_key_env": "FAKE_VLM_KEY"}

            async def judged():
                async with VLMClient.from_config(config, tmp_path / "cache") as client:
                    official = OfficialPrompts(checkout)
                    return await judge_video(client, instance, video, Protocol(), official=official)

            return asyncio.run(judged()), fake.requests

    return run


def test_the_requests_are_the_checkouts_own(judge, video, sorting):
    documents, requests = judge(CHECKOUT, video, sorting)
    assert documents["score"]["status"] == "ok" and documents["score"]["final"] == 1.0
    by_system = {}
    for received in requests:
        by_system.setdefault(received.system, []).append(received)
    module = load(CHECKOUT)
    (completeness,) = by_system[module.COMPLETENESS_SYSTEM]
    iid = sorting["instance"].removeprefix("sorting_lv1_")
    assert completeness.texts[0].startswith(f"Job: sorting / lv1 / {iid}\nTiers:\n")
    assert [LABEL.fullmatch(t)[2] for t in completeness.texts[1:-1]] == [
        "0", "8", "16", "24", "32", "40"]  # fmt: skip
    assert completeness.texts[-1] == "JSON: tier, reasoning"
    # the input and reference images, then the frames: the images this project encodes
    refs = [encode_image(sorting[key], 768) for key in ("image", "gt_image")]
    assert completeness.images[:2] == refs and len(completeness.images) == 8

    windows = sorted(by_system[module.AGENTIC_SYSTEM], key=lambda r: r.texts[0].split("pass")[1])
    heads = [w.texts[0].splitlines()[-1] for w in windows]
    assert heads == [
        "pass 1 at 4 fps, chunk 1 of 2 (frames 0..36, 10 of 12)",
        "pass 1 at 4 fps, chunk 2 of 2 (frames 36..44, 3 of 12)",
        "pass 2 at 8 fps, chunk 1 of 1 (frames 0..8, 5 of 5)",
    ]
    assert all(w.texts[1] == "Pictures: start, answer" and w.images[:2] == refs for w in windows)
    assert "Aim:\n" + sorting["goal"] in windows[0].texts[0]

    (verdict,) = by_system["STAND-IN VERDICT SYSTEM."]
    assert verdict.images == [] and f"Count faults of sorting lv1 {iid}." in verdict.texts[0]
    assert "- pass 1 @4 chunk 1 (0-36, 0.000-2.250s)\n    0-36: t=0.00-2.25s: fine from 0" in (
        verdict.texts[0])  # fmt: skip
    assert "- pass 2 @8 chunk 1 (0-8, 0.000-0.500s)\n    0-8: t=0.00-0.50s: fine from 0" in (
        verdict.texts[0])  # fmt: skip


def test_an_edited_checkout_asks_again_only_what_it_changes(judge, video, sorting, tmp_path):
    """Same checkout text: every call from the cache, same params wherever it lies. Another
    completeness system prompt: new params, and only the completeness call is sent again."""
    first, sent = judge(CHECKOUT, video, sorting)
    moved = tmp_path / "moved"
    shutil.copytree(CHECKOUT, moved)
    again, resent = judge(moved, video, sorting)
    assert resent == [] and again["score"]["cached_calls"] == len(sent)
    params = {path: json.loads(judge_params({"official_prompts": str(path)})) for path in
              (CHECKOUT, moved)}  # fmt: skip
    assert params[CHECKOUT] == params[moved] and "official_prompts" in params[moved]
    module = moved / MODULE
    module.write_text(module.read_text().replace("STAND-IN COMPLETENESS", "EDITED COMPLETENESS"))
    edited, asked = judge(moved, video, sorting)
    assert [r.system for r in asked] == [load(moved).COMPLETENESS_SYSTEM]
    assert json.loads(judge_params({"official_prompts": str(moved)})) != params[moved]
    assert edited["score"]["final"] == first["score"]["final"]
    # the transition and image judges keep their templates: their params do not change
    for calls in (["transition"], ["image"]):
        assert "official_prompts" not in json.loads(
            judge_params({"official_prompts": moved}, calls)
        )


@pytest.mark.parametrize(
    ("edit", "named"),
    [
        (None, "cannot read"),
        ("drop", "lacks _polish_messages"),
        ("raise", "does not import (RuntimeError: no key file)"),
    ],
)
def test_a_checkout_without_the_builders_is_named_before_any_call(tmp_path, edit, named):
    checkout = tmp_path / "checkout"
    if edit:
        shutil.copytree(CHECKOUT, checkout)
        module = checkout / MODULE
        text = module.read_text()
        if edit == "drop":
            text = text.replace("def _polish_messages(", "def _polish_messages_gone(")
        else:
            text += '\nraise RuntimeError("no key file")\n'
        module.write_text(text)
    with pytest.raises(ValueError, match="judge.official_prompts: ") as raised:
        judge_params({"official_prompts": str(checkout)})
    assert named in str(raised.value) and str(checkout / MODULE) in str(raised.value)


def test_a_job_reads_the_checkout_its_params_were_made_from(tmp_path):
    """The judge job loads the checkout its config names; edited since the run started, the
    job stops before any call and says to run again."""
    checkout = tmp_path / "checkout"
    shutil.copytree(CHECKOUT, checkout)
    smk = SimpleNamespace(config={"judge": {"official_prompts": str(checkout)}})
    params = json.loads(judge_params(smk.config["judge"]))
    assert isinstance(official_prompts(smk, params), OfficialPrompts)
    assert official_prompts(SimpleNamespace(config={"judge": {}}), {"prompts": {}}) is None
    module = checkout / MODULE
    module.write_text(module.read_text() + "\n# edited\n")
    with pytest.raises(ValueError, match="changed after this run started; run snakemake again"):
        official_prompts(smk, params)
