"""A video submission the provider may have taken is never sent again without the user's
word, for every provider against its double, through the job itself (`generate_api_job`,
as Snakemake runs it): a read timeout after the double made the operation, a 502 and a 504
after it made it, each followed by a plain rerun and by --rerun-incomplete (for the job,
both are the same job once more): one submission; then `video_api={resubmit: true}` sends
it once more, and only once; a forced rerun replays the kept video, asking nothing (not even
for the key). A 2xx answer that cannot be read (Kling's without a task id) is unsure too. A
4xx answer, or an error raised before the request left, clears the state. (A kill -9 while
the submission is out, through Snakemake: test_never_twice.py; every 5xx's reading:
tests/paid/test_errors.py.)"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from tests.support.fake_video_api import LATE, FakeVideoAPI
from tests.support.video_api_run import KEY_ENV, MODELS, api_entry
from tests.support.workflow import REPO
from tests.video_api.test_providers import IMAGE, run, spec
from vgi_models.registry import load_registry
from workflow_scripts.common.config import SchemaError, check
from workflow_scripts.common.http import ServiceError
from workflow_scripts.paid.ledger import read_ledger
from workflow_scripts.video_api.job import generate_api_job
from workflow_scripts.video_api.operation import NotResumable, Operation
from workflow_scripts.video_api.provider import Retry
from workflow_scripts.video_api.providers import open_provider, provider_class

RESEND = "video_api={resubmit: true}"
TAKEN = {"timeout": LATE, "502": 502, "504": 504}  # the double takes it, then answers so


@pytest.fixture
def fake(monkeypatch):
    monkeypatch.setenv(KEY_ENV, "test-access-key:test-secret-key-0123456789abcdef012345")
    with FakeVideoAPI(polls=1) as server:
        server.late_s = 0.6  # past the job's read timeout (video_api.timeout_s: 0.3)
        yield server


def state(tmp_path, name) -> dict:
    return json.loads((tmp_path / name / "state.json").read_text())


def video_job(tmp_path, fake, name: str, **video_api):
    """A stand-in for Snakemake's job object of rule generate_api, (name, maze_square, lv1)."""
    entry = api_entry(name, fake)
    registry = tmp_path / "models.yaml"
    registry.write_text(yaml.safe_dump({name: entry}), encoding="utf-8")
    outdir, instance = tmp_path / "results", IMAGE.stem
    folder = outdir / name / "maze_square" / instance
    options = {"requests_per_minute": {}, "poll_s": 0.01, "timeout_s": 0.3, "timeout_min": 1,
               "resubmit": False}  # fmt: skip
    return SimpleNamespace(
        config={
            "outdir": str(outdir),
            "model_registry": str(registry),
            "video_api": options | video_api,
            "prices": {"video_seconds": {entry["model_id"]: 0.1}},
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


def outputs(job) -> tuple[bytes, dict]:
    return Path(job.output.video).read_bytes(), json.loads(Path(job.output.meta).read_text())


@pytest.mark.parametrize("answer", TAKEN)
@pytest.mark.parametrize("name", MODELS)
def test_a_submission_that_may_have_been_taken_is_sent_again_only_on_the_users_word(
    tmp_path, fake, name, answer, monkeypatch
):
    fake.taken_then = [TAKEN[answer]]
    job = video_job(tmp_path, fake, name)
    for attempt in range(3):  # the run, a plain rerun, --rerun-incomplete: no submission
        with pytest.raises(SystemExit) as failure:
            generate_api_job(job)
        message = str(failure.value)
        assert "it may have been taken and paid" in message and len(fake.submissions) == 1
        console = provider_class(fake.doubles[name].provider).CONSOLE
        assert console.startswith("https://") and f"console ({console};" in message
        assert f"snakemake {job.output.video} --config '{RESEND}'" in message
        (record,) = (tmp_path / "results" / "resume").rglob("*.json")
        assert f"the attempt record {record}" in message
        assert json.loads(record.read_text())["status"] == "submitting"
        if attempt == 0:
            expected = "ReadTimeout" if answer == "timeout" else f"HTTP {answer}"
            assert expected in message
    job.config["video_api"]["resubmit"] = True  # the user's word: sent once more
    generate_api_job(job)
    made, meta = outputs(job)
    assert meta["status"] == "ok" and meta["submissions"] == 1 and len(fake.submissions) == 2
    assert record.with_suffix(".mp4").read_bytes() == made  # kept beside the state
    # a forced rerun (its outputs gone), the word still given: the kept video, no request
    asked, operation = len(fake.requests), meta["operation"]
    Path(job.output.video).unlink()
    monkeypatch.delenv(KEY_ENV)
    generate_api_job(job)
    assert outputs(job)[0] == made and outputs(job)[1]["operation"] == operation
    assert len(fake.requests) == asked and len(fake.submissions) == 2
    ledger = read_ledger(job.config["outdir"])  # one record per paid submission
    assert ledger["outcome"].tolist() == ["unsure", "billed"]
    assert ledger["cost"].tolist() == [pytest.approx(0.1 * meta["seconds_of_video"])] * 2


def test_an_operation_still_running_then_expired_stops_until_resubmission(tmp_path, fake):
    fake.polls = 1000
    job = video_job(tmp_path, fake, "sora2", timeout_min=0.005)  # 0.3 s, then the job fails
    with pytest.raises(SystemExit, match="still running after 0.005 min .*waits on it again"):
        generate_api_job(job)
    fake.forget()
    with pytest.raises(SystemExit) as failure:
        generate_api_job(job)
    assert "no longer knows operation video_0001" in str(failure.value)
    assert f"The command: snakemake {job.output.video} --config '{RESEND}'" in str(failure.value)
    assert len(fake.submissions) == 1
    fake.polls = 1
    # resubmitted, with a minute to finish (0.3 s is a loaded machine's submit and poll)
    job.config["video_api"] |= {"resubmit": True, "timeout_min": 1}
    generate_api_job(job)
    assert outputs(job)[1]["status"] == "ok" and len(fake.submissions) == 2


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


@pytest.mark.parametrize("branch", ["video_api", "image_api"])
def test_a_request_timeout_is_a_setting_checked_before_any_job(branch):
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text(encoding="utf-8"))
    assert config[branch]["timeout_s"] > 0
    config[branch]["timeout_s"] = 0
    with pytest.raises(SchemaError, match=rf"config\['{branch}'\]\['timeout_s'\]: 0 is less"):
        check(config, REPO / "config" / "schemas" / "config.schema.yaml")
