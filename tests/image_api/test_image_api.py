"""Rule `generate_image_api`'s job through each provider's real SDK against the HTTP
doubles: the image made and kept, never asked for twice, a refusal, 429s, a refused key, a
slow reply, a job cut off after the reply; the settings checked before any job."""

from __future__ import annotations

import io
import json
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml
from PIL import Image

from tests.support.image_doubles.base import JPEG, PROMPT_BLOCKED, REFUSED, slow, throttled
from tests.support.image_doubles.server import FakeImageAPI
from tests.support.unanswered import endpoint
from vgi_models.registry import load_registry
from workflow_scripts.common.layout import failed_generation
from workflow_scripts.image_api import job
from workflow_scripts.image_api.job import generate_image_api_job
from workflow_scripts.image_api.provider import Retry
from workflow_scripts.image_api.providers import open_image_provider, setting_problems

KEY_ENV = "FAKE_IMAGE_KEY"
PROMPT = "Draw the path that solves the maze in red."
ENTRIES = {  # the paper's image API models, as their registry entries read
    "nano_banana_pro": {"source": "api", "output": "image", "provider": "gemini_image",
                        "model_id": "gemini-3-pro-image-preview",
                        "generation": {"aspect_ratio": "16:9", "image_size": "2K"}},
    "gpt_image_2": {"source": "api", "output": "image", "provider": "openai_image",
                    "model_id": "gpt-image-2",
                    "generation": {"size": "1536x1024", "quality": "high"}},
    "seedream_4_5": {"source": "api", "output": "image", "provider": "seedream",
                     "model_id": "seedream-4-5-251128",
                     "generation": {"size": "2560x1440", "watermark": False}},
    "qwen_image_3_pro": {"source": "api", "output": "image", "provider": "qwen_image",
                         "model_id": "qwen-image-3.0-pro",
                         "generation": {"size": "2560*1440", "prompt_extend": False,
                                        "watermark": False, "seed": 0}},
}  # fmt: skip
MODELS = tuple(ENTRIES)


@pytest.fixture
def fake(monkeypatch):
    monkeypatch.setenv(KEY_ENV, "test-image-key-0123456789")
    with FakeImageAPI() as server:
        yield server


def smk(tmp_path, fake, model: str, image: Path, **config):
    """A stand-in for Snakemake's job object of (model, maze, maze_lv1_001)."""
    entry = ENTRIES[model] | {"api_key_env": KEY_ENV,
                              "base_url": fake.base_url(ENTRIES[model]["provider"])}  # fmt: skip
    registry = tmp_path / "models.yaml"
    registry.write_text(yaml.safe_dump({model: entry}), encoding="utf-8")
    outdir = tmp_path / "results"
    folder = outdir / model / "maze" / "maze_lv1_001"
    settings = load_registry({model: entry})[model].settings()
    return SimpleNamespace(
        config={"outdir": str(outdir), "model_registry": str(registry), **config},
        input=SimpleNamespace(image=str(image)),
        params=SimpleNamespace(settings=json.dumps(settings), prompt=PROMPT),
        output=SimpleNamespace(
            image=str(folder / "image.png"), meta=str(folder / "generation.json")
        ),
        wildcards=SimpleNamespace(model=model, task="maze", instance="maze_lv1_001"),
        log=[str(outdir / "logs" / "generate_image_api" / model / "maze_lv1_001.log")],
    )


def outputs(job_smk) -> tuple[bytes, dict]:
    meta = json.loads(Path(job_smk.output.meta).read_text())
    return Path(job_smk.output.image).read_bytes(), meta


def delete_outputs(job_smk) -> None:
    Path(job_smk.output.image).unlink()
    Path(job_smk.output.meta).unlink()


def log_of(job_smk) -> str:
    return Path(job_smk.log[0]).read_text()


@pytest.mark.parametrize("model", MODELS)
def test_the_image_is_made_from_the_input_and_prompt_and_asked_for_once(tmp_path, fake, image,
                                                                         model):  # fmt: skip
    job_smk = smk(tmp_path, fake, model, image)
    generate_image_api_job(job_smk)
    made, meta = outputs(job_smk)
    picture = Image.open(io.BytesIO(made))
    inverted = picture.getpixel((2, 2))  # Seedream answers a JPEG: within its rounding
    tolerance = 4 if model == "seedream_4_5" else 0
    assert picture.format == "PNG"
    assert all(abs(a - b) <= tolerance for a, b in zip(inverted, (5, 15, 235), strict=True))
    (sent,) = fake.sent
    assert sent.prompt == PROMPT and sent.image == image.read_bytes()
    assert sent.model == ENTRIES[model]["model_id"] and sent.key == fake.api_key
    if model == "nano_banana_pro":  # the thought's interim image is not the answer
        assert sent.settings["responseModalities"] == ["IMAGE"]
        assert sent.settings["imageConfig"] == {"aspectRatio": "16:9", "imageSize": "2K"}
        assert picture.size == (128, 72)
    elif model == "gpt_image_2":
        assert sent.settings == {"n": "1", "size": "1536x1024", "quality": "high"}
        assert picture.size == (96, 64)
    elif model == "qwen_image_3_pro":  # one image, behind a link fetched once
        assert sent.settings == {"n": 1} | ENTRIES[model]["generation"]
        assert picture.size == (80, 45) and fake.fetches == 1
    else:  # one image, as base64
        assert sent.settings == {"size": "2560x1440", "watermark": False,
                                 "response_format": "b64_json",
                                 "sequential_image_generation": "disabled"}  # fmt: skip
        assert picture.size == (80, 45)
    assert meta["status"] == "ok" and meta["model"] == model and meta["prompt"] == PROMPT
    assert meta["settings"]["generation"] == ENTRIES[model]["generation"]
    assert (meta["requests"], meta["cached"]) == (1, False)
    # rerun with the outputs gone (--forcerun): the kept reply, no request
    delete_outputs(job_smk)
    generate_image_api_job(job_smk)
    again, meta = outputs(job_smk)
    assert again == made and len(fake.sent) == 1
    assert (meta["requests"], meta["cached"], meta["status"]) == (0, True, "ok")
    cached = tmp_path / "results" / "cache" / "image_api" / ENTRIES[model]["model_id"]
    (kept,) = cached.glob("*.png")
    record = json.loads(kept.with_suffix(".json").read_text())
    assert kept.read_bytes() == made and record["status"] == "ok"
    assert record["instance"] == "maze_lv1_001" and record["model"] == model
    # another prompt is another request
    job_smk.params.prompt = PROMPT + " Then stop."
    generate_image_api_job(job_smk)
    assert len(fake.sent) == 2 and outputs(job_smk)[1]["requests"] == 1


def test_a_jpeg_reply_beside_text_parts_is_written_as_png(tmp_path, fake, image):
    fake.script(JPEG)
    job_smk = smk(tmp_path, fake, "nano_banana_pro", image)
    generate_image_api_job(job_smk)
    assert Image.open(job_smk.output.image).format == "PNG"


@pytest.mark.parametrize(
    ("model", "script", "reason"),
    [
        ("nano_banana_pro", REFUSED, "refused: IMAGE_SAFETY: no image in the answer"),
        ("nano_banana_pro", PROMPT_BLOCKED, "refused: PROHIBITED_CONTENT: "),
        ("gpt_image_2", REFUSED, "refused: The request was rejected by the safety system"),
        (
            "qwen_image_3_pro",
            PROMPT_BLOCKED,
            "refused: Input data may contain inappropriate content. (DataInspectionFailed)",
        ),
    ],
)
def test_a_refusal_is_a_finished_result_never_asked_again(tmp_path, fake, image, model,
                                                          script, reason):  # fmt: skip
    fake.script(script)
    job_smk = smk(tmp_path, fake, model, image)
    generate_image_api_job(job_smk)
    made, meta = outputs(job_smk)
    assert made == b"" and meta["status"] == "error" and meta["reason"].startswith(reason)
    assert failed_generation(job_smk.output.image) == meta["reason"]  # what the judge reads
    delete_outputs(job_smk)
    generate_image_api_job(job_smk)
    assert len(fake.sent) == 1 and outputs(job_smk)[1] == meta | {
        "requests": 0, "cached": True, "seconds": outputs(job_smk)[1]["seconds"]}  # fmt: skip


@pytest.mark.parametrize("model", MODELS)
def test_a_429_is_sent_again_after_the_servers_hint(tmp_path, fake, image, model):
    fake.script(throttled(0.2))
    rate = tmp_path / "results" / "cache" / "image_api" / f"rate_{ENTRIES[model]['model_id']}"
    limits = {"requests_per_minute": {ENTRIES[model]["model_id"]: 30}}
    job_smk = smk(tmp_path, fake, model, image, image_api=limits)
    generate_image_api_job(job_smk)
    assert [sent.status for sent in fake.sent] == [429, 200]
    assert outputs(job_smk)[1]["requests"] == 2
    assert len(rate.read_text().splitlines()) == 2  # each request counted in the shared window
    assert "request not taken (HTTP 429" in log_of(job_smk)


@pytest.mark.parametrize("model", MODELS)
def test_a_refused_key_fails_the_job_and_writes_nothing(tmp_path, fake, image, model,
                                                        monkeypatch):  # fmt: skip
    monkeypatch.setenv(KEY_ENV, "a-wrong-key")
    job_smk = smk(tmp_path, fake, model, image)
    with pytest.raises(SystemExit):
        generate_image_api_job(job_smk)
    assert len(fake.sent) == 1  # not retried
    assert not Path(job_smk.output.image).exists() and not Path(job_smk.output.meta).exists()
    cache = tmp_path / "results" / "cache" / "image_api"
    assert not [path for path in cache.rglob("*") if path.is_file()]  # no attempt left: not taken
    line = log_of(job_smk).strip().splitlines()[-1]
    assert line.startswith(f"Image API failure: maze_lv1_001 ({model}): HTTP 401")


def test_a_missing_key_fails_the_job_before_any_request(tmp_path, fake, image, monkeypatch):
    monkeypatch.delenv(KEY_ENV)
    job_smk = smk(tmp_path, fake, "gpt_image_2", image)
    with pytest.raises(SystemExit, match=rf"\${KEY_ENV} \(the key of model 'gpt_image_2'\)"):
        generate_image_api_job(job_smk)
    assert fake.sent == []


@pytest.mark.parametrize("model", MODELS)
def test_a_reply_slower_than_the_timeout_fails_the_job_unsent_again(tmp_path, fake, image,
                                                                    model):  # fmt: skip
    fake.script(slow(2.0))
    job_smk = smk(tmp_path, fake, model, image, image_api={"timeout_s": 0.5})
    with pytest.raises(SystemExit, match="may have been taken"):
        generate_image_api_job(job_smk)
    assert len(fake.sent) == 1 and not Path(job_smk.output.image).exists()


@pytest.mark.parametrize("model", MODELS)
def test_a_job_cut_off_after_the_reply_is_rerun_without_a_request(tmp_path, fake, image,
                                                                  monkeypatch, model):  # fmt: skip
    job_smk = smk(tmp_path, fake, model, image)
    write, failed = job.write_atomic, []

    def fail_the_output_once(path, content):
        if str(path) == job_smk.output.image and not failed:
            failed.append(path)
            raise OSError("disk full")
        write(path, content)

    monkeypatch.setattr(job, "write_atomic", fail_the_output_once)
    with pytest.raises(OSError):
        generate_image_api_job(job_smk)
    assert not Path(job_smk.output.image).exists() and not Path(job_smk.output.meta).exists()
    generate_image_api_job(job_smk)
    made, meta = outputs(job_smk)
    assert len(fake.sent) == 1 and (meta["requests"], meta["cached"]) == (0, True)
    assert Image.open(io.BytesIO(made)).format == "PNG"


def test_an_image_link_that_cannot_be_read_fails_the_job_never_asking_again(tmp_path, fake,
                                                                            image):  # fmt: skip
    """Qwen-Image's answer names the image by a link: one that cannot be read after the
    request was answered is an image made and billed, so the job fails without a second
    request (a 5xx of the link would be fetched again)."""
    fake.protocols["qwen_image"].host = lambda data, name: f"{fake.url}/files/expired.png"
    job_smk = smk(tmp_path, fake, "qwen_image_3_pro", image)
    with pytest.raises(SystemExit, match="may have been taken"):
        generate_image_api_job(job_smk)
    assert len(fake.sent) == 1 and fake.fetches == 1
    assert "the image was made, but its link could not be read (HTTP 404" in log_of(job_smk)
    assert not Path(job_smk.output.image).exists()


def test_no_key_is_written_anywhere(tmp_path, fake, image):
    for model in MODELS:
        generate_image_api_job(smk(tmp_path, fake, model, image))
    fake.script(REFUSED)
    job_smk = smk(tmp_path, fake, "gpt_image_2", image)
    job_smk.params.prompt = "another"
    generate_image_api_job(job_smk)
    files = [path for path in tmp_path.rglob("*") if path.is_file()]
    assert len(fake.sent) == len(MODELS) + 1 and len(files) > 8
    assert not [path for path in files if fake.api_key.encode() in path.read_bytes()]


def test_settings_are_checked_with_the_allowed_values():
    assert setting_problems("nano_banana_pro", "gemini_image", "gemini-3-pro-image-preview",
                            ENTRIES["nano_banana_pro"]["generation"]) == []  # fmt: skip
    (problem,) = setting_problems(
        "nano_banana_pro", "gemini_image", "gemini-3-pro-image-preview",
        {"aspect_ratio": "16:9", "image_size": "3K"},
    )  # fmt: skip
    assert problem == (
        "model 'nano_banana_pro' (provider gemini_image): generation.image_size: '3K' is not "
        "allowed ('1K', '2K', '4K')"
    )
    (problem,) = setting_problems("gpt_image_2", "openai_image", "gpt-image-2",
                                  {"size": "1500x1000"})  # fmt: skip
    assert problem.startswith(
        "model 'gpt_image_2' (provider openai_image): generation.size: '1500x1000' is not "
        "allowed (one of 1024x1024, 1536x1024, 1024x1536, auto, or WIDTHxHEIGHT in multiples"
    )
    wide = {"size": "1536x864"}  # any size in multiples of 16 within the limits
    assert setting_problems("gpt_image_2", "openai_image", "gpt-image-2", wide) == []
    (problem,) = setting_problems("gpt_image_2", "openai_image", "gpt-image-2",
                                  {"size": "auto", "quality": "ultra"})  # fmt: skip
    assert "generation.quality: 'ultra' is not allowed ('low', 'medium', 'high', 'auto')" in problem
    seedream = ("seedream_4_5", "seedream", "seedream-4-5-251128")
    assert setting_problems(*seedream, {"size": "2K"}) == []
    assert setting_problems(*seedream, {"size": "2560x1440", "watermark": False}) == []
    (problem,) = setting_problems(*seedream, {"size": "1920x1080"})  # under 2560x1440's pixels
    assert problem == (
        "model 'seedream_4_5' (provider seedream): generation.size: '1920x1080' is not allowed "
        "(one of 2K, 4K, or WIDTHxHEIGHT of 2560x1440 to 4096x4096 pixels in all, between 1:16 "
        "and 16:1)"
    )
    qwen = ("qwen_image_3_pro", "qwen_image", "qwen-image-3.0-pro")
    assert setting_problems(*qwen, {"size": "2048*1152", "seed": 7}) == []
    (problem,) = setting_problems(*qwen, {"size": "2560x1440"})
    assert problem.endswith("generation.size: '2560x1440' is not WIDTH*HEIGHT (the service's "
                            "form, e.g. 2560*1440)")  # fmt: skip
    (problem,) = setting_problems(*qwen, {"size": "4096*2304"})  # over 2048*2048's pixels
    assert problem == (
        "model 'qwen_image_3_pro' (provider qwen_image): generation.size: '4096*2304' is not "
        "allowed (512*512 to 2048*2048 pixels in all, between 1:8 and 8:1)"
    )
    (problem,) = setting_problems("q", "qwen_image", "qwen-image-edit-plus", {"size": "2560*1440"})
    assert problem.endswith("generation.size: '2560*1440' is not allowed (each side 512 to 2048)")
    (problem,) = setting_problems("x", "dalle", "dall-e-3", {})
    assert problem.startswith("model 'x': provider 'dalle' is not an image provider (gemini_image")


@pytest.mark.parametrize("where", ["refused", "full"])
@pytest.mark.parametrize("model", MODELS)
def test_a_request_that_never_connected_is_not_taken(fake, image, model, where):
    """A refused connection or a connect timeout: the request never reached the provider,
    so it is sent again (a reply too slow is unsure: the test above)."""
    with endpoint(where) as url:
        entry = ENTRIES[model] | {"base_url": fake.base_url(ENTRIES[model]["provider"])}
        entry["base_url"] = entry["base_url"].replace(fake.url, url)
        client = open_image_provider(load_registry({model: entry})[model], "k", timeout_s=0.2)
        try:
            with pytest.raises(Retry) as error:
                client.request(image, PROMPT)
        finally:
            client.close()
    assert not error.value.unsure and str(error.value).startswith("connection failed: Connect")


def test_the_plan_reads_each_providers_image_size_from_its_settings():
    """The size a plan prices an image at before any is made: the service's own setting
    where it names one, else None (the input's size, the service's choice)."""
    from workflow_scripts.image_api.providers import nominal_size

    assert nominal_size("gemini_image", {"aspect_ratio": "16:9", "image_size": "2K"}) == (
        2731,
        1536,
    )
    assert nominal_size("gemini_image", {"aspect_ratio": "1:1"}) == (1024, 1024)  # 1K unset
    assert nominal_size("openai_image", {"size": "1536x1024"}) == (1536, 1024)
    assert nominal_size("openai_image", {"size": "auto"}) is None
    assert nominal_size("seedream", {"size": "4K"}) == (5461, 3072)
    assert nominal_size("seedream", {"size": "2560x1440"}) == (2560, 1440)
    assert nominal_size("qwen_image", {"size": "2048*1152"}) == (2048, 1152)
    assert nominal_size("qwen_image", {"prompt_extend": False}) is None
