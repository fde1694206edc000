"""An image request that may have been taken (and paid) is never sent again without the
user's word: a read timeout after the double took it, a 502 or a 504 after it took it, and
a run killed while it was out, each followed by a plain rerun and by --rerun-incomplete
(one request each); then `image_api={resubmit: true}` sends it once more, and only once.
A paid reply that does not convert is kept and recorded as a billed failure."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest
import yaml

from tests.image_api.test_image_api import ENTRIES, MODELS, delete_outputs, log_of, outputs, smk
from tests.support.image_doubles.base import Script, slow
from tests.support.image_doubles.server import API_KEY, FakeImageAPI
from tests.support.workflow import REPO, default_config, snakemake
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


@pytest.mark.parametrize("model", MODELS)
def test_a_reply_that_does_not_decode_is_a_billed_failure(tmp_path, fake, image, model,
                                                          monkeypatch):  # fmt: skip
    import tests.support.image_doubles.gemini_image as gemini
    import tests.support.image_doubles.openai_image as openai
    import tests.support.image_doubles.qwen_image as qwen
    import tests.support.image_doubles.seedream as seedream

    for protocol in (gemini, openai, qwen, seedream):
        monkeypatch.setattr(protocol, "made_image", lambda *args: b"\x89PNG\r\n\x1a\nbroken")
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

TASKS = ["clock_running", "sorting"]
INSTANCES = [f"{task}_lv1_00{n}" for task in TASKS for n in (1, 2)]


def study_config(workdir: Path, fake) -> dict:
    registry = {"gpt_image_2": ENTRIES["gpt_image_2"] | {
        "api_key_env": "FAKE_IMAGE_KEY", "base_url": fake.base_url("openai_image")}}  # fmt: skip
    registry["static_image"] = {"source": "static", "generation": {"num_frames": 81, "fps": 16}}
    (workdir / "models.yaml").write_text(yaml.safe_dump(registry), encoding="utf-8")
    config = default_config(workdir, tasks=TASKS, levels=[1], subset="full")
    config |= {"models": ["static_image"], "image_models": ["gpt_image_2"]}
    config |= {"model_registry": str(workdir / "models.yaml"), "judge": {"enabled": False}}
    config["image_api"] = {"timeout_s": 1}
    return config


def requests_per_image(fake) -> Counter:
    return Counter(hashlib.sha256(sent.prompt.encode() + sent.image).hexdigest()
                   for sent in fake.sent)  # fmt: skip


def killed_with_a_request_out(workdir: Path, config: dict, fake) -> None:
    """`snakemake image_all --keep-going` as a process of its own: its first three requests
    are taken and answered too late, 502 and 504; the fourth is taken and held while the
    run is killed (its whole group, SIGKILL)."""
    fake.script(slow(3), TAKEN["502"], TAKEN["504"], slow(60))
    path = workdir / "config.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    command = [sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "-d",
               str(workdir), "--configfile", str(path), "--cores", "1", "--keep-going",
               "image_all"]  # fmt: skip
    with open(workdir / "killed.log", "w") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT,
                                   start_new_session=True)  # fmt: skip
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and process.poll() is None:
            if len(fake.sent) >= len(INSTANCES):
                time.sleep(0.5)  # the fourth is out, held by the double
                os.killpg(process.pid, signal.SIGKILL)
                break
            time.sleep(0.1)
        process.wait()
    assert process.returncode == -signal.SIGKILL, (workdir / "killed.log").read_text()[-3000:]


def test_a_run_killed_or_unanswered_pays_once_until_the_user_says(tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_IMAGE_KEY", API_KEY)
    with FakeImageAPI() as fake:
        config = study_config(tmp_path, fake)
        killed_with_a_request_out(tmp_path, config, fake)
        counts = [len(fake.sent)]
        assert snakemake(tmp_path, config, "--unlock").returncode == 0
        fake.unscript()  # any request sent from now on is answered at once
        reruns = []
        for args in (["--keep-going"], ["--keep-going", "--rerun-incomplete"]):
            reruns.append(snakemake(tmp_path, config, "image_all", *args))
            counts.append(len(fake.sent))
        assert set(requests_per_image(fake).values()) == {1} and counts == [4, 4, 4]
        for rerun in reruns:
            assert rerun.returncode != 0
            assert rerun.stdout.count("it may have been taken and paid") >= len(INSTANCES)
            assert f"--config '{RESEND}'" in rerun.stdout
        resend = snakemake(tmp_path, config, "image_all", "--config", RESEND)
        assert resend.returncode == 0, resend.stdout[-3000:]
        counts.append(len(fake.sent))
        again = snakemake(tmp_path, config, "image_all", "--forcerun", "generate_image_api",
                          "--config", RESEND)  # fmt: skip
        assert again.returncode == 0, again.stdout[-3000:]
        counts.append(len(fake.sent))
    assert counts == [4, 4, 4, 8, 8] and set(requests_per_image(fake).values()) == {2}
    # every paid request in the ledger (4 unsure, 4 images), and in tables/costs.csv
    ledger = read_ledger(tmp_path / "results")
    assert sorted(ledger["outcome"]) == ["billed"] * 4 + ["unsure"] * 4
    costs = pd.read_csv(tmp_path / "results" / "tables" / "costs.csv")
    costs = costs[costs["model"] == "gpt_image_2"].set_index("judge")
    price = config["prices"]["images"]["gpt-image-2"]
    assert costs.loc["generate", "calls"] == 8
    assert costs.loc["generate", "cost"] == pytest.approx(8 * price)
    for instance in INSTANCES:
        meta = tmp_path / "results" / "gpt_image_2" / instance.rsplit("_lv", 1)[0] / instance
        assert json.loads((meta / "generation.json").read_text())["status"] == "ok"
    print(f"\nrequests after the kill, two reruns, the resend, a forced rerun: {counts}")


def test_a_billed_refusal_is_in_the_ledger_an_unbilled_one_is_not(tmp_path, fake, image):
    from tests.support.image_doubles.base import REFUSED
    from workflow_scripts.paid.errors import Refused

    assert Refused("x", billed=True).billed and not Refused("x", billed=False).billed
    fake.script(REFUSED)
    job_smk = smk(tmp_path, fake, "gpt_image_2", image)
    generate_image_api_job(job_smk)
    ledger = read_ledger(job_smk.config["outdir"])
    assert ledger["outcome"].tolist() == ["refused"] and ledger["cost"].tolist() == [None]
