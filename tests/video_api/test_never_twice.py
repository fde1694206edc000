"""Snakemake killed (kill -9, its jobs with it) while every provider's submission is out,
the doubles holding their answers: a plain rerun and --rerun-incomplete each fail on them
without sending anything (they may have been paid), saying how to send them once more;
`video_api={resubmit: true}` sends each once more, and a run killed mid-wait on those
operations and run again with the word still given waits on the same ones: two
submissions per video in all; a forced rerun replays the kept videos, asking nothing."""

from __future__ import annotations

import json

from tests.support.fake_video_api import API_KEY, HELD, FakeVideoAPI
from tests.support.video_api_run import KEY_ENV, MODELS, api_config, submissions_per_video
from tests.support.workflow import killed_when, snakemake

POLLS = 10_000  # an operation still running when the run is killed
RESEND = "video_api={resubmit: true}"
CORES = str(len(MODELS))  # every provider's job at once
RUN = ("--cores", CORES, "generate_all")


def statuses(workdir) -> list[str]:
    states = (workdir / "results" / "resume").glob("*/*/*/*.json")
    return sorted(json.loads(path.read_text())["status"] for path in states)


def test_a_run_killed_while_submissions_are_out_pays_once_until_the_users_word(
    tmp_path, monkeypatch
):
    monkeypatch.setenv(KEY_ENV, API_KEY)
    with FakeVideoAPI(polls=POLLS) as fake:
        config = api_config(tmp_path, fake)
        config["benchmark"] |= {"tasks": ["sorting"], "levels": [1]}  # one video a provider
        fake.taken_then = [HELD] * len(MODELS)
        killed_when(tmp_path, config, lambda: len(fake.submissions) == len(MODELS), *RUN)
        fake.release()
        assert statuses(tmp_path) == ["submitting"] * len(MODELS)
        counts = [len(fake.submissions)]
        assert snakemake(tmp_path, config, "--unlock").returncode == 0  # the killed run's lock
        for again in (["--keep-going"], ["--keep-going", "--rerun-incomplete"]):
            rerun = snakemake(tmp_path, config, "generate_all", "--cores", CORES, *again)
            counts.append(len(fake.submissions))
            assert rerun.returncode != 0
            assert rerun.stdout.count("it may have been taken and paid") >= len(MODELS)
            assert rerun.stdout.count(f"--config '{RESEND}'") >= len(MODELS)
        assert counts == [len(MODELS)] * 3 and set(submissions_per_video(fake).values()) == {1}

        # the user's word; the run killed once each operation it made was polled
        def polled() -> bool:
            made = fake.submissions[len(MODELS) :]
            return len(made) == len(MODELS) and all(op.polls_left < POLLS for op in made)

        killed_when(tmp_path, config, polled, *RUN, "--config", RESEND)
        assert statuses(tmp_path) == ["submitted"] * len(MODELS)
        for op in fake.submissions:  # done after two more polls
            op.polls_left = min(op.polls_left, 2)
        assert snakemake(tmp_path, config, "--unlock").returncode == 0
        result = snakemake(tmp_path, config, "generate_all", "--cores", CORES,
                           "--rerun-incomplete", "--config", RESEND)  # fmt: skip
        assert result.returncode == 0, result.stdout[-3000:]
        per_video = submissions_per_video(fake)
        assert len(per_video) == len(MODELS) and set(per_video.values()) == {2}
        logs = (tmp_path / "results" / "logs" / "generate_api").rglob("*.log")
        resumed = [log for log in logs if "resuming operation" in log.read_text()]
        assert len(resumed) == len(MODELS)  # each waited on the operation the word made
        asked = len(fake.requests)
        forced = snakemake(tmp_path, config, "generate_all", "--forcerun", "generate_api")
        assert forced.returncode == 0, forced.stdout[-3000:]
        assert len(fake.requests) == asked  # the kept videos: no request at all
        assert statuses(tmp_path) == ["done"] * len(MODELS)
    total = len(fake.submissions)
    print(f"\nsubmissions after the kill, a plain rerun, --rerun-incomplete: {counts}; after "
          f"the word, a kill mid-wait, its rerun and a forced rerun: {total}")  # fmt: skip
