"""The image judge end to end: rule judge_image's job, the real google-genai client
against FakeVLM, real PNG files."""

from __future__ import annotations

import base64
import json
from types import SimpleNamespace

import pytest
from PIL import Image, ImageDraw

from tests.support.fake_vlm import FakeVLM, Received, Script, version
from workflow_scripts.judge.frames import encode_image
from workflow_scripts.judge.image import REPLY, judge_image_job
from workflow_scripts.judge.prompts import NO_REFERENCE
from workflow_scripts.judge.settings import judge_params
from workflow_scripts.judge.templates import HERE as TEMPLATES

MODEL, TASK = "image_model", "sorting"
WITH_REF, WITHOUT_REF = "sorting_lv1_001", "sorting_lv1_002"
CAPTIONS = {
    "input": "Input image (the starting state the model was given):",
    "reference": "Reference image (a correct final state):",
    "generated": "Generated image (the image to judge):",
}
SPEC = "Draw the bars sorted from shortest to tallest, left to right."
GT_TEXT = "Four bars, heights rising from left to right."


ANSWER = '{"order":[2,4,1,3]}'  # a rubric entry's answer, as compact JSON


def verdict(success: bool) -> dict:
    return {"success": success, "reasoning": f"the goal is {'' if success else 'not '}reached"}


def png(path, size, colour):
    """A small PNG with a drawn mark, so that every image encodes to different bytes."""
    path.parent.mkdir(parents=True, exist_ok=True)
    image = Image.new("RGB", size, colour)
    ImageDraw.Draw(image).rectangle((size[0] // 4, size[1] // 4, size[0] // 2, size[1] // 2))
    image.save(path)
    return path


@pytest.fixture
def study(tmp_path, monkeypatch):
    """Two instances (one with a reference image and text, one without) and their
    generated images (1280x720: shrunk to 768 on the long side)."""
    monkeypatch.setenv("FAKE_VLM_KEY", "test-key")
    outdir = tmp_path / "results"
    inputs = tmp_path / "tasks"
    instances, images = {}, {}
    for n, (name, has_ref) in enumerate([(WITH_REF, True), (WITHOUT_REF, False)]):
        instances[name] = {
            "instance": name,
            "task": TASK,
            "level": 1,
            "image": str(png(inputs / f"{name}.png", (320, 180), (20 * n, 90, 200))),
            "gt_image": str(png(inputs / f"{name}_gt.png", (320, 180), (200, 20, 60)))
            if has_ref
            else None,
            "gt_text": GT_TEXT if has_ref else None,
            "answer": ANSWER if has_ref else None,
            "image_prompt": f"{SPEC} ({name})",
        }
        images[name] = png(outdir / MODEL / TASK / name / "image.png", (1280, 720), (9, 9 * n, 9))
    return SimpleNamespace(outdir=outdir, instances=instances, images=images, log=tmp_path / "log")


def run_job(study, fake: FakeVLM, attempts: int = 3) -> dict:
    """Rule judge_image's job on the study's images; returns each instance's score.json."""
    judge = {
        "backend": "gemini",
        "model": "fake-model",
        "base_url": fake.url,
        "api_key_env": "FAKE_VLM_KEY",
        "max_attempts": attempts,
        "backoff_initial_s": 0.01,
        "backoff_max_s": 0.01,
    }
    out = study.outdir / MODEL / TASK / "judge_image"
    judge_image_job(  # what Snakemake hands rule judge_image's script
        SimpleNamespace(
            params=SimpleNamespace(judge=judge_params(judge, ["image"]), instances=study.instances),
            input=SimpleNamespace(images=[str(path) for path in study.images.values()]),
            output=[str(out)],
            log=[str(study.log)],
            config={"outdir": str(study.outdir), "judge": judge},
        )
    )
    return {name: json.loads((out / name / "score.json").read_text()) for name in study.images}


def sequence(received: Received) -> list:
    """The request's parts in order: texts as they are, images as ("image", bytes)."""
    parts = [part for content in received.body["contents"] for part in content["parts"]]
    return [
        ("image", base64.urlsafe_b64decode(part["inlineData"]["data"]))
        if "inlineData" in part
        else part["text"]
        for part in parts
    ]


def captioned_images(parts: list) -> list[tuple[str, bytes]]:
    """(the text just before it, bytes) of each image of `parts`."""
    return [(parts[i - 1], part[1]) for i, part in enumerate(parts) if isinstance(part, tuple)]


def request_of(fake: FakeVLM, name: str) -> Received:
    [received] = [r for r in fake.requests if any(f"({name})" in text for text in r.texts)]
    return received


def test_the_request_shows_each_image_after_its_caption_and_the_texts(study):
    with FakeVLM(lambda received: verdict(True)) as fake:
        run_job(study, fake)
    assert len(fake.requests) == 2
    system = (TEMPLATES / "image_system.txt").read_text()
    for name, instance in study.instances.items():
        received = request_of(fake, name)
        assert (received.schema, received.system) == (REPLY, system)
        expected = [(CAPTIONS["input"], encode_image(instance["image"], 768))]
        if instance["gt_image"]:
            expected.append((CAPTIONS["reference"], encode_image(instance["gt_image"], 768)))
        expected.append((CAPTIONS["generated"], encode_image(study.images[name], 768)))
        assert captioned_images(sequence(received)) == expected
        assert expected[-1][1] != encode_image(study.images[name], 1280)  # sent shrunk
        text = "\n".join(received.texts)
        assert f"{SPEC} ({name})" in text
        assert f"Task: {TASK}\n" in text  # as Table 19's request: no level, no instance id
        assert (
            "Level:" not in text
            and "Instance:" not in text
            and name not in text.replace(f"({name})", "")
        )
    with_ref, without_ref = ("\n".join(request_of(fake, n).texts) for n in study.instances)
    assert GT_TEXT in with_ref and ANSWER in with_ref and NO_REFERENCE not in with_ref
    assert NO_REFERENCE in without_ref and GT_TEXT not in without_ref
    assert CAPTIONS["reference"] not in without_ref


def test_the_rules_are_table_19s(study):
    """Both criteria; the background against the input, with Table 19's failures and
    tolerances; the JSON answer one acceptable solution; one verdict with its reasoning."""
    with FakeVLM(lambda received: verdict(True)) as fake:
        run_job(study, fake)
    text = " ".join("\n".join(request_of(fake, WITH_REF).texts).split())
    for rule in (
        "Success needs both of these",
        "judged against the input image, never against the reference",
        "scene, objects, layout, framing and main colours",
        "recolouring or distorting the background",
        "changing its style or medium fails it",
        "reference image or answer, where this instance has one, is one acceptable solution",
        "small rendering artifacts",
        "small colour or lighting changes",
        "a light shift in style",
        "rebuilt, replaced or restyled in substance",
        "`success`: true or false; `reasoning`",
    ):
        assert rule in text, rule
    assert REPLY["required"] == ["success", "reasoning"]


def test_success_and_failure_are_recorded_with_the_reasoning(study):
    replies = {WITH_REF: verdict(True), WITHOUT_REF: verdict(False)}

    def responder(received: Received) -> dict:
        return next(replies[name] for name in replies if f"({name})" in "".join(received.texts))

    with FakeVLM(responder) as fake:
        scores = run_job(study, fake)
    for name, reply in replies.items():
        score = scores[name]
        assert {key: score[key] for key in reply} == reply
        assert score["status"] == "ok" and (score["calls"], score["cached_calls"]) == (1, 0)
        assert score["model_version"] == version("fake-model")
        assert set(score["tokens"]) == {"prompt", "candidates", "thoughts", "cached", "total"}
        assert score["tokens"]["prompt"] > 0 and score["tokens"]["thoughts"] == 5
    assert scores[WITH_REF]["success"] is True
    assert scores[WITHOUT_REF]["success"] is False
    assert scores[WITHOUT_REF]["reasoning"] == "the goal is not reached"
    assert "reason" not in scores[WITH_REF]
    summary = study.log.read_text().strip().splitlines()[-1]
    assert json.loads(summary) == {
        "documents": 2,
        "ok": 2,
        "error": 0,
        "calls": 2,
        "cached_calls": 0,
    }


def test_a_reply_without_its_reasoning_is_asked_again_and_the_whole_one_taken(study):
    del study.images[WITHOUT_REF]
    with FakeVLM(lambda received: verdict(False)) as fake:
        fake.script(Script(text=json.dumps({"success": True})))
        score = run_job(study, fake)[WITH_REF]
    assert len(fake.requests) == 2
    assert score["status"] == "ok" and score["success"] is False
    assert score["reasoning"] == "the goal is not reached"
    assert score["calls"] == 2  # every attempt sent


def test_a_reply_that_stays_invalid_is_an_error_not_a_failure(study):
    del study.images[WITHOUT_REF]
    with FakeVLM(lambda received: {"success": "yes", "reasoning": "r"}) as fake:
        score = run_job(study, fake, attempts=2)[WITH_REF]
    assert len(fake.requests) == 2
    assert score["status"] == "error" and score["success"] is None
    assert "reply does not match the schema at success" in score["reason"]
    assert "after 2 attempt(s)" in score["reason"]
    assert score["calls"] == 2 and score["tokens"]["total"] > 0


@pytest.mark.parametrize("damage", ["garbage", "missing"])
def test_an_unreadable_generated_image_is_an_error_without_a_call(study, damage):
    image = study.images[WITH_REF]
    if damage == "garbage":
        image.write_bytes(b"\x89PNG\r\n\x1a\n" + b"cut short" * 20)
    else:
        image.unlink()
    with FakeVLM(lambda received: verdict(True)) as fake:
        scores = run_job(study, fake)
    assert [request_of(fake, WITHOUT_REF)] == fake.requests  # none for the damaged image
    score = scores[WITH_REF]
    assert score["status"] == "error" and score["success"] is None
    assert score["reason"].startswith("image unreadable")
    assert f"snakemake --cores 1 --force {image}" in score["reason"]
    assert (score["calls"], score["cached_calls"], score["tokens"]) == (0, 0, {})
    assert scores[WITHOUT_REF]["status"] == "ok"


def test_a_refused_key_fails_the_job_and_writes_nothing(study):
    fake = FakeVLM(lambda received: verdict(True), api_key="another-key")
    with fake, pytest.raises(SystemExit) as failed:
        run_job(study, fake)
    assert "HTTP 401" in str(failed.value) and "nothing was written" in str(failed.value)
    assert len(fake.requests) == 1  # the client's first call goes alone
    assert not (study.outdir / MODEL / TASK / "judge_image").exists()


def test_a_second_run_is_answered_from_the_cache(study):
    with FakeVLM(lambda received: verdict(False)) as fake:
        first = run_job(study, fake)
        second = run_job(study, fake)
    assert len(fake.requests) == 2  # the first run's two calls only
    for name in study.images:
        assert (second[name]["calls"], second[name]["cached_calls"]) == (0, 1)
        assert second[name]["tokens"] == first[name]["tokens"]
        assert second[name]["success"] is False
        assert second[name]["model_version"] == version("fake-model")
