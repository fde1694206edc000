"""Every provider through its real SDK against the HTTP doubles: several polls, a
refusal, a failure, an expired operation, 429s, a retired model; at most one submission
per instance."""

from __future__ import annotations

import io
from pathlib import Path

import imageio.v3 as iio
import pytest

from tests.support.fake_video_api import FakeVideoAPI
from tests.support.unanswered import endpoint
from tests.support.video_api_run import KEY_ENV, MODELS, api_entry
from tests.support.video_doubles.kling import BLOCKED
from vgi_models.registry import load_registry
from workflow_scripts.common.http import ServiceError
from workflow_scripts.common.pacing import SharedRateLimit
from workflow_scripts.paid.retry import not_taken
from workflow_scripts.video_api.operation import NotResumable, Operation
from workflow_scripts.video_api.provider import RetiredModel, Retry
from workflow_scripts.video_api.providers import open_provider

EXAMPLES = Path(__file__).resolve().parents[2] / "tasks/examples"
IMAGE = EXAMPLES / "maze_square/input_image/lv1/maze_square_lv1_001.png"


@pytest.fixture
def fake():
    with FakeVideoAPI(polls=3) as server:
        yield server


def spec(name: str, fake):
    return load_registry({name: api_entry(name, fake)})[name]


def run(tmp_path, fake, name, resubmit=False, pace=None):
    client = open_provider(spec(name, fake), fake.api_key, pace)
    submitted = []
    try:
        operation = Operation(tmp_path / name / "state.json", client, resubmit)
        return operation.run(IMAGE, "solve the maze", submitted.append, 0.01, 30), submitted
    finally:
        client.close()


@pytest.mark.parametrize("name", MODELS)
def test_several_polls_then_a_real_video_from_one_submission(tmp_path, fake, name):
    fake.throttle = 2  # the first two requests answered 429: submitted again after the hint
    outcome, submitted = run(tmp_path, fake, name)
    assert outcome.ok and len(submitted) == 1 and len(fake.submissions) == 1
    frames = iio.imread(io.BytesIO(outcome.video), extension=".mp4")
    assert frames.shape[0] == fake.submissions[0].seconds * fake.fps  # every second asked for
    answered = [r for r in fake.requests if r[2] == 200]
    assert len(answered) - 1 >= fake.polls  # the submission, then running... until done
    assert fake.keys == {fake.api_key}
    # a rerun of the finished job: its kept video, no new submission
    again, submitted = run(tmp_path, fake, name)
    assert again.ok and submitted == [] and len(fake.submissions) == 1


@pytest.mark.parametrize("name", MODELS)
@pytest.mark.parametrize("kind", ["refused", "failed"])
def test_a_refusal_or_failure_is_an_outcome_with_the_providers_reason(tmp_path, fake, name, kind):
    fake.refuse(IMAGE, kind)
    outcome, _ = run(tmp_path, fake, name)
    assert not outcome.ok and outcome.reason.startswith(f"{kind}:")
    if kind == "refused":
        assert fake.doubles[name].refusal in outcome.reason


@pytest.mark.parametrize("name", MODELS)
def test_an_expired_operation_is_an_error_and_resubmits_only_when_told(tmp_path, fake, name):
    client = open_provider(spec(name, fake), fake.api_key)
    operation = Operation(tmp_path / name / "state.json", client)
    operation._submit(IMAGE, "p", lambda op: None)  # submitted, then the job was killed
    client.close()
    fake.forget()
    for _ in range(2):  # stays an error, rerun after rerun
        with pytest.raises(NotResumable, match="no longer knows operation .*video_api.resubmit"):
            run(tmp_path, fake, name)
    assert len(fake.submissions) == 1
    outcome, submitted = run(tmp_path, fake, name, resubmit=True)
    assert outcome.ok and len(submitted) == 1 and len(fake.submissions) == 2


def test_a_submission_cut_off_before_its_id_came_back_needs_the_users_word(tmp_path, fake):
    state = tmp_path / "veo31" / "state.json"
    state.parent.mkdir()
    state.write_text('{"status": "submitting", "since": "2026-12-03T05:00:00+00:00"}')
    with pytest.raises(NotResumable, match="never got its operation id"):
        run(tmp_path, fake, "veo31")
    assert fake.submissions == []


@pytest.mark.parametrize("name", MODELS)
def test_a_wrong_key_fails_without_a_submission_and_is_never_repeated_in_errors(
    tmp_path, fake, name
):
    client = open_provider(spec(name, fake), "wrong-key-123:wrong-secret-0123456789abcdef0123456")
    with pytest.raises(Exception) as error:
        Operation(tmp_path / "s.json", client).run(IMAGE, "p", lambda op: None, 0.01, 5)
    assert "401" in str(error.value)
    assert "wrong-key-123" not in str(error.value) and "wrong-secret" not in str(error.value)
    assert fake.submissions == [] and not (tmp_path / "s.json").exists()


def test_submissions_go_through_the_shared_pacing_window(tmp_path, fake):
    window = tmp_path / "rate"
    pace = SharedRateLimit(window, requests=60)
    for name in MODELS:
        run(tmp_path, fake, name, pace=pace)
    counted = [line for line in window.read_text().splitlines() if line.split()[1] == "1"]
    assert len(counted) == len(MODELS)  # one submission each; polls are not counted


@pytest.mark.parametrize("name", MODELS)
def test_a_refused_video_is_asked_again_only_when_resubmission_is_allowed(tmp_path, fake, name):
    fake.refuse(IMAGE)  # Seedance refuses the submission itself: no operation, none billed
    first, _ = run(tmp_path, fake, name)
    again, submitted = run(tmp_path, fake, name)  # a forced rerun: the same answer
    assert not first.ok and not again.ok and submitted == [] and len(fake.submissions) == 1
    fake.outcomes.clear()  # the user changed nothing; the provider now lets it through
    retried, submitted = run(tmp_path, fake, name, resubmit=True)
    assert retried.ok and len(submitted) == 1 and len(fake.submissions) == 2


@pytest.mark.parametrize("name", ["gen45", "wan27"])
def test_a_cancelled_task_is_never_waited_on_nor_submitted_again_unasked(tmp_path, fake, name):
    """Runway's CANCELLED (a task cancelled or deleted in its console) and Model Studio's
    CANCELED make no video: the job stops as for an expired operation, and only
    resubmission submits again."""
    fake.refuse(IMAGE, "cancelled")
    with pytest.raises(NotResumable, match="no longer knows operation .* is CANCELL?ED"):
        run(tmp_path, fake, name)
    fake.outcomes.clear()
    outcome, submitted = run(tmp_path, fake, name, resubmit=True)
    assert outcome.ok and len(submitted) == 1 and len(fake.submissions) == 2


def test_a_seedance_video_link_past_its_24_hours_needs_the_users_word(tmp_path, fake):
    """Seedance lists a task for 7 days but keeps its video's link for 24 hours: a later
    rerun writes the video kept beside the state, asking nothing; one whose video is not
    kept (a state from before they were) finds the task succeeded and the link expired
    (storage answers 403), and stops instead of paying again until resubmission is
    allowed."""
    first, _ = run(tmp_path, fake, "seedance2")
    fake.doubles["seedance2"].expired_links.add(fake.submissions[0].id)
    asked = len(fake.requests)
    kept, submitted = run(tmp_path, fake, "seedance2")
    assert kept.video == first.video and submitted == [] and len(fake.requests) == asked
    (tmp_path / "seedance2" / "state.mp4").unlink()
    with pytest.raises(NotResumable, match="no longer knows operation .*kept 24 hours"):
        run(tmp_path, fake, "seedance2")
    assert first.ok and len(fake.submissions) == 1
    again, submitted = run(tmp_path, fake, "seedance2", resubmit=True)
    assert again.ok and len(submitted) == 1 and len(fake.submissions) == 2


def test_a_prompt_wan_refuses_at_submission_is_recorded_with_no_task(tmp_path, fake):
    """Model Studio's inspection answers HTTP 400 DataInspectionFailed to the submission: no
    task, nothing billed; a rerun gives the recorded refusal without asking again."""
    fake.doubles["wan27"].inspected.add("p")
    for _ in range(2):
        client = open_provider(spec("wan27", fake), fake.api_key)
        try:
            operation = Operation(tmp_path / "state.json", client)
            outcome = operation.run(IMAGE, "p", lambda op: pytest.fail("billed"), 0.01, 5)
        finally:
            client.close()
        assert outcome.reason.startswith("refused: Input data may contain inappropriate")
        assert outcome.reason.endswith("(DataInspectionFailed)") and operation.submissions == 0
    asked = [path for method, path, _ in fake.requests if path.endswith("/video-synthesis")]
    assert fake.submissions == [] and len(asked) == 1


def test_wan_uploads_the_first_frame_and_submits_its_oss_url(tmp_path, fake):
    """The SDK's uploader: a certificate (with the key), the file to the bucket its policy
    names (without the key), then the submission naming `oss://<key>`; the video is made of
    the uploaded image. A data URI would be answered as a URL the service cannot read."""
    outcome, submitted = run(tmp_path, fake, "wan27")
    paths = [path.split("?")[0] for _, path, _ in fake.requests]
    assert paths[:3] == ["/api/v1/uploads", "/dashscope-file",
                         "/api/v1/services/aigc/video-generation/video-synthesis"]  # fmt: skip
    ((key, image),) = fake.doubles["wan27"].stored.items()
    assert key.endswith("/maze_square_lv1_001.png") and image == IMAGE.read_bytes()
    assert outcome.ok and len(submitted) == 1 and fake.submissions[0].image == image


@pytest.mark.parametrize("name", MODELS)
def test_429_answers_to_polls_are_waited_out(tmp_path, fake, name):
    client = open_provider(spec(name, fake), fake.api_key)
    throttle = lambda operation: setattr(fake, "throttle", 3)  # noqa: E731  the next 3 polls
    try:
        operation = Operation(tmp_path / "state.json", client)
        outcome = operation.run(IMAGE, "p", throttle, 0.01, 60)
    finally:
        client.close()
    assert outcome.ok and len(fake.submissions) == 1
    assert sum(status == 429 for *_, status in fake.requests) == 3


def test_a_retired_model_stops_with_one_line_that_says_how_to_import_its_videos(tmp_path, fake):
    """The service's answer for a model past its shutdown date, through the real openai SDK
    (the double answers as OpenAI does: 404 model_not_found; Sora's API shut down on
    2026-09-24): no retry, nothing to resume, one line naming `source: videos`."""
    fake.retired.add("sora-2")
    with pytest.raises(RetiredModel) as error:
        run(tmp_path, fake, "sora2")
    message = str(error.value)
    assert "\n" not in message and message.startswith("model 'sora-2' is retired")
    assert "404 model_not_found" in message and "`source: videos`" in message
    posts = [request for request in fake.requests if request[0] == "POST"]
    assert len(posts) == 1 and fake.submissions == []  # asked once, never taken
    assert not (tmp_path / "sora2" / "state.json").exists()  # a rerun asks again


def test_a_submission_kling_refuses_outright_is_the_outcome_and_is_not_asked_again(tmp_path, fake):
    """Kling's content security policy refuses the input itself (HTTP 400, code 1301): the
    instance's recorded error, with no task and nothing billed; a rerun gives it unasked."""
    client = open_provider(spec("kling3", fake), fake.api_key)
    try:
        for _ in range(2):
            operation = Operation(tmp_path / "state.json", client)
            outcome = operation.run(IMAGE, f"a maze of {BLOCKED}", lambda op: None, 0.01, 5)
            assert outcome.reason.startswith("refused: ") and "(code 1301)" in outcome.reason
    finally:
        client.close()
    assert [request[2] for request in fake.requests] == [400] and fake.submissions == []


def test_a_kling_key_without_its_secret_names_its_variable_and_sends_nothing(tmp_path, fake):
    client = open_provider(spec("kling3", fake), "access-key-only-5e1f")
    with pytest.raises(ServiceError) as error:
        Operation(tmp_path / "s.json", client).run(IMAGE, "p", lambda op: None, 0.01, 5)
    assert f"${KEY_ENV} must hold Kling's access key and secret key" in str(error.value)
    assert "access-key-only-5e1f" not in str(error.value)
    assert fake.requests == [] and not (tmp_path / "s.json").exists()


@pytest.fixture(scope="module")
def addresses():
    """The doubles' addresses (entries are made for them, then pointed elsewhere)."""
    with FakeVideoAPI() as server:
        yield server


EXPECTED = {
    "refused": "connection failed: ConnectError",
    "full": "connection failed: ConnectTimeout",
    "silent": "no answer: ReadTimeout",
}


@pytest.mark.parametrize("where", EXPECTED)
@pytest.mark.parametrize("name", MODELS)
def test_a_submission_that_never_connected_is_not_taken_one_unanswered_is_unsure(
    addresses, name, where
):
    """A refused connection or a connect timeout: the request never reached the provider,
    so it is sent again; a read timeout: it may have been taken, so it never is. (Wan 2.7
    uploads the first frame before it submits: an upload cut off is never a submission.)"""
    with endpoint(where) as url:
        entry = api_entry(name, addresses)
        entry["base_url"] = entry["base_url"].replace(addresses.url, url)
        client = open_provider(load_registry({name: entry})[name], addresses.api_key, timeout_s=0.2)
        try:
            with pytest.raises(Retry) as error:
                client.submit(IMAGE, "solve the maze")
        finally:
            client.close()
    unsure = where == "silent" and name != "wan27"
    assert error.value.unsure is unsure and not_taken(error.value) is not unsure
    expected = "upload not done: " if name == "wan27" else EXPECTED[where]
    assert str(error.value).startswith(expected), str(error.value)


# The setting that turns a provider's prompt rewriting off, as its request names it.
REWRITE_OFF = {"wan27": "prompt_extend", "veo31": "enhancePrompt"}


@pytest.mark.parametrize("name", MODELS)
def test_the_shipped_entry_sends_the_prompt_as_the_task_wrote_it(tmp_path, fake, name):
    """The service gets the prompt as written; where it rewrites prompts by default (Model
    Studio's `prompt_extend`, Vertex AI's `enhancePrompt`), the request turns that off."""
    outcome, _ = run(tmp_path, fake, name)
    (submission,) = fake.submissions
    assert outcome.ok and submission.prompt == "solve the maze"
    if name in REWRITE_OFF:
        assert submission.settings[REWRITE_OFF[name]] is False
