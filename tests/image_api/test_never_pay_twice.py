"""An image request that may have been taken (and paid) is never sent again without the
user's word, for every provider against its double: a read timeout after the double took
it, a 502 or a 504 after it took it (through the job itself), and a Snakemake run killed
while it was out, each followed by a plain rerun and by --rerun-incomplete (one request
each); then `image_api={resubmit: true}` sends it once more, and only once. A paid reply
that does not convert is kept and recorded as a billed failure; tables/costs.csv counts
every paid request, a billed failure and a refusal per provider included."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest
import yaml

from tests.image_api.test_image_api import ENTRIES, MODELS, delete_outputs, log_of, outputs, smk
from tests.support.image_doubles.base import BROKEN, REFUSED, Script, slow
from tests.support.image_doubles.server import API_KEY, FakeImageAPI
from tests.support.workflow import REPO, default_config, killed_when, snakemake
from workflow_scripts.image_api.job import generate_image_api_job
from workflow_scripts.paid.ledger import read_ledger

RESEND = "image_api={resubmit: true}"
TAKEN = {  # the double takes the request (records it), then answers so
    "timeout": slow(1.5),  # past the client's timeout of 0.5 s
    "502": Script(status=502, message="Bad Gateway", retry_s=0.1),
    "504": Script(status=504, message="Gateway Timeout", retry_s=0.1),
}


@pytest.fixture
def fake(monkeypatch):
    monkeypatch.setenv("FAKE_IMAGE_KEY", API_KEY)
    with FakeImageAPI() as server:
        yield server


def attempt_record(job_smk, model: str) -> Path:
    (record,) = (Path(job_smk.config["outdir"]) / "cache" / "image_api").glob(
        f"{ENTRIES[model]['model_id']}/*.json"
    )
    return record


@pytest.mark.parametrize("answer", TAKEN)
@pytest.mark.parametrize("model", MODELS)
def test_a_request_that_may_have_been_taken_is_sent_again_only_on_the_users_word(
    tmp_path, fake, image, model, answer
):
    fake.script(TAKEN[answer])
    job_smk = smk(tmp_path, fake, model, image, image_api={"timeout_s": 0.5})
    with pytest.raises(SystemExit) as failure:
        generate_image_api_job(job_smk)
    assert len(fake.sent) == 1 and not Path(job_smk.output.image).exists()
    assert "it may have been taken and paid" in str(failure.value)
    record = attempt_record(job_smk, model)
    assert json.loads(record.read_text())["status"] == "sending"
    message = log_of(job_smk).strip().splitlines()[-1]
    assert str(record) in message and "provider's console (https://" in message
    assert f"snakemake {job_smk.output.image} --config '{RESEND}'" in message
    # a plain rerun, and another (Snakemake's --rerun-incomplete reruns the same job): no
    # request, the same advice
    for _ in range(2):
        with pytest.raises(SystemExit, match="it may have been taken and paid"):
            generate_image_api_job(job_smk)
        assert f"--config '{RESEND}'" in log_of(job_smk)
    assert len(fake.sent) == 1
    # the user's word: sent once more, and only once
    job_smk.config["image_api"]["resubmit"] = True
    generate_image_api_job(job_smk)
    made, meta = outputs(job_smk)
    assert len(fake.sent) == 2 and meta["status"] == "ok" and meta["requests"] == 1
    assert json.loads(record.read_text())["attempt"] == 2
    delete_outputs(job_smk)
    generate_image_api_job(job_smk)
    assert len(fake.sent) == 2 and outputs(job_smk) == (made, outputs(job_smk)[1])
    assert outputs(job_smk)[1]["cached"] is True
    # one ledger record per paid request: the unsure one, then the image
    ledger = read_ledger(job_smk.config["outdir"])
    assert ledger["outcome"].tolist() == ["unsure", "billed"]
    assert set(ledger["output"]) == {"image"} and set(ledger["model"]) == {model}


@pytest.mark.parametrize("model", MODELS)
def test_the_reply_is_kept_before_it_is_converted(tmp_path, fake, image, model, monkeypatch):
    """A job cut off between the reply and its conversion converts the kept bytes again."""
    from workflow_scripts.image_api import job

    job_smk = smk(tmp_path, fake, model, image)

    def cut_off(cache, reply):
        raise RuntimeError("cut off")

    monkeypatch.setattr(job, "converted", cut_off)
    with pytest.raises(RuntimeError):
        generate_image_api_job(job_smk)
    record = json.loads(attempt_record(job_smk, model).read_text())
    assert record["status"] == "answered" and len(fake.sent) == 1
    monkeypatch.undo()
    monkeypatch.setenv("FAKE_IMAGE_KEY", API_KEY)
    generate_image_api_job(job_smk)
    assert len(fake.sent) == 1 and outputs(job_smk)[1]["status"] == "ok"


def test_a_reply_that_does_not_decode_is_a_billed_failure(tmp_path, fake, image):
    """(Every provider's, through Snakemake: the kill test below.)"""
    model = "seedream_4_5"
    fake.script(BROKEN)
    job_smk = smk(tmp_path, fake, model, image)
    generate_image_api_job(job_smk)
    made, meta = outputs(job_smk)
    assert made == b"" and meta["status"] == "error"
    assert meta["reason"].startswith("failed: the reply is not an image")
    record = attempt_record(job_smk, model)
    assert json.loads(record.read_text())["status"] == "failed"
    assert record.with_suffix(".reply").read_bytes() == b"\x89PNG\r\n\x1a\nbroken"
    delete_outputs(job_smk)
    generate_image_api_job(job_smk)  # a finished result: never asked again
    assert len(fake.sent) == 1 and outputs(job_smk)[1]["reason"] == meta["reason"]
    assert read_ledger(job_smk.config["outdir"])["outcome"].tolist() == ["failed"]


def test_a_200_without_an_image_is_kept_as_a_billed_failure(tmp_path, fake, image, monkeypatch):
    protocol = fake.protocols["openai_image"]
    monkeypatch.setattr(protocol, "reply", lambda sent, script: {"created": 1, "data": []})
    job_smk = smk(tmp_path, fake, "gpt_image_2", image)
    generate_image_api_job(job_smk)
    made, meta = outputs(job_smk)
    assert meta["reason"] == "failed: the answer holds no image (data[0].b64_json)"
    record = attempt_record(job_smk, "gpt_image_2")
    assert json.loads(record.with_suffix(".reply").read_text())["data"] == []
    assert read_ledger(job_smk.config["outdir"])["outcome"].tolist() == ["failed"]


# -- the workflow: Snakemake's runs, a kill -9 among them ------------------------------------

TASKS = ["clock_running", "sorting"]  # one instance each (subset half, level 1)
HELD = slow(120)  # taken, then no answer before the kill (image_api.timeout_s: 300)


def study_config(workdir: Path, fake) -> dict:
    registry = {model: entry | {"api_key_env": "FAKE_IMAGE_KEY",
                                "base_url": fake.base_url(entry["provider"])}
                for model, entry in ENTRIES.items()}  # fmt: skip
    registry["static_image"] = {"source": "static", "generation": {"num_frames": 81, "fps": 16}}
    (workdir / "models.yaml").write_text(yaml.safe_dump(registry), encoding="utf-8")
    config = default_config(workdir, tasks=TASKS, levels=[1])
    config |= {"models": ["static_image"], "image_models": list(MODELS)}
    config |= {"model_registry": str(workdir / "models.yaml"), "judge": {"enabled": False}}
    return config


def inputs(task: str) -> list[bytes]:
    """The input images of `task`'s level 1 in the bundled examples."""
    folder = REPO / "tasks" / "examples" / task / "input_image" / "lv1"
    return [path.read_bytes() for path in sorted(folder.glob(f"{task}_lv1_00?.png"))]


def test_a_run_killed_while_requests_are_out_pays_once_until_the_user_says(tmp_path, monkeypatch):
    """Every image provider: one instance's request taken and killed while out (unsure),
    another's answered with an image that does not decode (a billed failure); a plain
    rerun and --rerun-incomplete send nothing; the user's word sends the unsure ones once
    more, and the service refuses them this time (a billed refusal). tables/costs.csv:
    three paid requests per provider. (A forced rerun's kept replies: the job's tests.)"""
    monkeypatch.setenv("FAKE_IMAGE_KEY", API_KEY)
    with FakeImageAPI() as fake:
        config = study_config(tmp_path, fake)
        killed, broken = (inputs(task) for task in TASKS)  # whichever instance is selected
        fake.by_image = dict.fromkeys(killed, HELD) | dict.fromkeys(broken, BROKEN)

        def out() -> bool:  # every request sent, and the failed ones' jobs finished
            finished = (tmp_path / "killed.log").read_text().count("Finished jobid")
            return len(fake.sent) == 2 * len(MODELS) and finished == len(MODELS)

        killed_when(tmp_path, config, out, "--cores", "8", "--keep-going", "image_all")
        counts = [len(fake.sent)]
        assert snakemake(tmp_path, config, "--unlock").returncode == 0
        fake.by_image |= dict.fromkeys(killed, REFUSED)  # what any request of it gets now
        reruns = []
        for args in (["--keep-going"], ["--keep-going", "--rerun-incomplete"]):
            reruns.append(snakemake(tmp_path, config, "image_all", "--cores", "4", *args))
            counts.append(len(fake.sent))
        for rerun in reruns:
            assert rerun.returncode != 0
            assert rerun.stdout.count("it may have been taken and paid") >= len(MODELS)
            assert f"--config '{RESEND}'" in rerun.stdout
        resend = snakemake(tmp_path, config, "image_all", "--cores", "4", "--config", RESEND)
        assert resend.returncode == 0, resend.stdout[-3000:]
        counts.append(len(fake.sent))
    n = len(MODELS)
    assert counts == [2 * n, 2 * n, 2 * n, 3 * n]
    per_image = Counter((sent.provider, sent.image) for sent in fake.sent)
    assert sorted(per_image.values()) == [1] * n + [2] * n  # the killed ones sent twice
    # every paid request in the ledger, and in tables/costs.csv, per provider
    ledger = read_ledger(tmp_path / "results")
    for model in MODELS:
        outcomes = ledger[ledger["model"] == model]["outcome"]
        assert sorted(outcomes) == ["failed", "refused", "unsure"]
    costs = pd.read_csv(tmp_path / "results" / "tables" / "costs.csv")
    made = costs[costs["judge"] == "generate"].set_index("model")
    for model in MODELS:
        price = config["prices"]["images"][ENTRIES[model]["model_id"]]
        assert made.loc[model, "calls"] == 3
        assert made.loc[model, "cost"] == pytest.approx(3 * price)
    print(f"\nrequests after the kill, a plain rerun, --rerun-incomplete, the word: {counts}")
    print(f"costs.csv (generate rows):\n{made.loc[list(MODELS)].to_string()}")


def test_a_billed_refusal_is_in_the_ledger_an_unbilled_one_is_not(tmp_path, fake, image):
    from workflow_scripts.paid.errors import Refused

    assert Refused("x", billed=True).billed and not Refused("x", billed=False).billed
    fake.script(REFUSED)
    job_smk = smk(tmp_path, fake, "gpt_image_2", image)
    generate_image_api_job(job_smk)
    ledger = read_ledger(job_smk.config["outdir"])
    assert ledger["outcome"].tolist() == ["refused"] and ledger["cost"].tolist() == [None]
