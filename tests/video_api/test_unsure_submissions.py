"""A video submission the provider may have taken is never sent again on its own: a 502 or a
504 after the double made the operation, and a 2xx answer that cannot be read (Kling's
without a task id) leave the state `submitting`; the rerun stops; `resubmit` sends it once
more, and only once. A 4xx answer, or an error raised before the request left, clears it."""

from __future__ import annotations

import json

import pytest

from tests.support.fake_video_api import FakeVideoAPI
from tests.support.video_api_run import MODELS, api_entry
from tests.video_api.test_providers import IMAGE, run, spec
from workflow_scripts.common.http import ServiceError
from workflow_scripts.video_api.operation import NotResumable, Operation
from workflow_scripts.video_api.provider import Retry
from workflow_scripts.video_api.providers import open_provider


@pytest.fixture
def fake():
    with FakeVideoAPI(polls=1) as server:
        yield server


def state(tmp_path, name) -> dict:
    return json.loads((tmp_path / name / "state.json").read_text())


@pytest.mark.parametrize("status", [500, 502, 503, 504])
@pytest.mark.parametrize("name", MODELS)
def test_a_5xx_after_the_submission_was_taken_is_unsure(tmp_path, fake, name, status):
    fake.taken_then = [status]
    with pytest.raises(Retry) as error:
        run(tmp_path, fake, name)
    assert len(fake.submissions) == 1  # not sent again by the job's own retries
    assert error.value.unsure and f"HTTP {status}" in str(error.value)
    assert state(tmp_path, name)["status"] == "submitting"
    for _ in range(2):  # a plain rerun, --rerun-incomplete: the same job, no submission
        with pytest.raises(NotResumable, match="video_api.resubmit: true"):
            run(tmp_path, fake, name)
    assert len(fake.submissions) == 1
    outcome, submitted = run(tmp_path, fake, name, resubmit=True)
    assert outcome.ok and len(submitted) == 1 and len(fake.submissions) == 2
    again, submitted = run(tmp_path, fake, name, resubmit=True)  # done: downloaded again
    assert again.ok and submitted == [] and len(fake.submissions) == 2


def test_a_2xx_without_a_task_id_is_unsure_not_cleared(tmp_path, fake, monkeypatch):
    double = fake.doubles["kling3"]
    handle = double.handle

    def without_task_id(server, method, match, body, headers):
        status, answer = handle(server, method, match, body, headers)
        if method == "POST" and status == 200:
            answer["data"].pop("task_id")
        return status, answer

    monkeypatch.setattr(double, "handle", without_task_id)
    with pytest.raises(Retry, match=r"the answer could not be read \(KeyError") as error:
        run(tmp_path, fake, "kling3")
    assert error.value.unsure and state(tmp_path, "kling3")["status"] == "submitting"
    with pytest.raises(NotResumable):
        run(tmp_path, fake, "kling3")
    assert len(fake.submissions) == 1


def test_an_error_before_the_request_left_or_a_4xx_clears_the_state(tmp_path, fake):
    client = open_provider(spec("kling3", fake), "no-colon-here")  # Kling's key: ACCESS:SECRET
    try:
        with pytest.raises(ServiceError, match="ACCESS_KEY:SECRET_KEY"):
            Operation(tmp_path / "state.json", client).run(IMAGE, "p", print, 0.01, 5)
    finally:
        client.close()
    assert not (tmp_path / "state.json").exists() and fake.submissions == []
    client = open_provider(spec("sora2", fake), "a-wrong-key")  # HTTP 401: not taken
    try:
        with pytest.raises(ServiceError, match="HTTP 401"):
            Operation(tmp_path / "state.json", client).run(IMAGE, "p", print, 0.01, 5)
    finally:
        client.close()
    assert not (tmp_path / "state.json").exists() and fake.submissions == []


def video_job(tmp_path, fake, name: str, **video_api):
    """A stand-in for Snakemake's job object of rule generate_api, (name, maze_square, lv1)."""
    from types import SimpleNamespace

    import yaml

    from vgi_models.registry import load_registry

    entry = api_entry(name, fake)
    registry = tmp_path / "models.yaml"
    registry.write_text(yaml.safe_dump({name: entry}), encoding="utf-8")
    outdir, instance = tmp_path / "results", IMAGE.stem
    folder = outdir / name / "maze_square" / instance
    options = {"requests_per_minute": {}, "poll_s": 0.01, "timeout_min": 1, "resubmit": False}
    return SimpleNamespace(
        config={
            "outdir": str(outdir),
            "model_registry": str(registry),
            "video_api": options | video_api,
            "prices": {"video_seconds": {}},
        },  # fmt: skip
        input=SimpleNamespace(image=str(IMAGE)),
        params=SimpleNamespace(
            settings=json.dumps(load_registry({name: entry})[name].settings()),
            prompt="solve the maze",
        ),  # fmt: skip
        output=SimpleNamespace(
            video=str(folder / "video.mp4"), meta=str(folder / "generation.json")
        ),
        wildcards=SimpleNamespace(model=name, task="maze_square", instance=instance),
        log=[str(outdir / "logs" / "generate_api" / name / f"{instance}.log")],
    )


def test_the_ledger_keeps_an_unsure_submission(tmp_path, fake, monkeypatch):
    from tests.support.video_api_run import KEY_ENV
    from workflow_scripts.paid.ledger import read_ledger
    from workflow_scripts.video_api.job import generate_api_job

    monkeypatch.setenv(KEY_ENV, fake.api_key)
    fake.taken_then = [502]
    job = video_job(tmp_path, fake, "sora2")
    with pytest.raises(SystemExit, match="it may have been taken and paid") as failure:
        generate_api_job(job)
    assert f"snakemake {job.output.video} --config 'video_api={{resubmit: true}}'" in str(
        failure.value
    )
    with pytest.raises(SystemExit, match="--config 'video_api={resubmit: true}'"):
        generate_api_job(job)  # the rerun: NotResumable, the same record in the ledger
    assert read_ledger(job.config["outdir"])["outcome"].tolist() == ["unsure"]
    job.config["video_api"]["resubmit"] = True
    generate_api_job(job)
    ledger = read_ledger(job.config["outdir"])
    assert ledger["outcome"].tolist() == ["unsure", "billed"] and len(fake.submissions) == 2
