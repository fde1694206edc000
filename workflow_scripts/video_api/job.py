"""The body of rule `generate_api`: one API model's video of one instance.

The settings that decide the video come as params (`settings`: the registry entry's
provider, model id and generation; `prompt`); how it is reached (the key's variable, the
endpoint) is read from the registry when the job starts, and how it is paced, polled and
whether it may resubmit from the config (`video_api`): none of them reruns a job. The
outputs: `video.mp4` and `generation.json` with `status: ok`; or, where the provider
refused or failed the generation, an empty `video.mp4` and `generation.json` with
`status: error` and the provider's reason (a finished result: the judge records it as the
instance's error, the tables count it as a failed generation).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import time
from pathlib import Path

from vgi_models.registry import run_spec
from vgi_models.state import state_key, write_atomic
from workflow_scripts.common.files import write_json
from workflow_scripts.common.http import ServiceError
from workflow_scripts.common.layout import RESUME, parse_run_key, run_folder
from workflow_scripts.common.logs import fail_job, job_log
from workflow_scripts.common.pacing import SharedRateLimit
from workflow_scripts.paid.attempt import resend_command, unsure_advice
from workflow_scripts.video_api.ledger import LEDGER, record
from workflow_scripts.video_api.operation import NotResumable, Operation
from workflow_scripts.video_api.provider import Retry
from workflow_scripts.video_api.providers import (
    open_provider,
    provider_class,
    resolution_of,
    seconds_of,
)

FAILURE = "Video API failure: "
BRANCH = "video_api"  # the config's section, and its `resubmit`


def asked(smk, spec, operation: Operation, image: Path, prompt: str):
    """The outcome of `operation`, asking its provider (a client of its SDK, the key read
    now): submitting where allowed, waiting, downloading."""
    config, options = smk.config, smk.config["video_api"]
    outdir, wildcards = config["outdir"], smk.wildcards
    key = os.environ.get(spec.api_key_env, "").strip()
    if not key:
        fail_job(f"{FAILURE}${spec.api_key_env} (the key of model {spec.key!r}) is not set")
    limit = (options["requests_per_minute"] or {}).get(spec.model_id)
    pace = limit and SharedRateLimit(Path(outdir) / RESUME / f"rate_{spec.model_id}", limit)
    operation.provider = open_provider(spec, key, pace, options["timeout_s"])
    try:
        return operation.run(
            image, prompt,
            lambda op: record(outdir, spec, wildcards.model, wildcards.task, wildcards.instance,
                              op, config["prices"]),
            options["poll_s"], options["timeout_min"] * 60,
        )  # fmt: skip
    finally:
        operation.provider.close()


def generate_api_job(smk) -> None:
    """Rule `generate_api`: the kept outcome, else submit (at most once), wait, download;
    see the module."""
    config, video = smk.config, Path(smk.output.video)
    run, task, instance = smk.wildcards.model, smk.wildcards.task, smk.wildcards.instance
    spec = run_spec(config["model_registry"], parse_run_key(run)[0], smk.params.settings)[0]
    options = config["video_api"]
    outdir = config["outdir"]
    logging.getLogger("workflow_scripts.video_api").setLevel(logging.INFO)  # submit, resume
    with job_log(smk):
        image, prompt = Path(smk.input.image), smk.params.prompt
        image_sha = hashlib.sha256(image.read_bytes()).hexdigest()
        digest = state_key(settings=spec.settings(), prompt=prompt, image=image_sha)
        state = run_folder(Path(outdir) / RESUME, run, task, instance) / f"{digest}.json"
        started = time.perf_counter()
        operation = Operation(state, resubmit=options["resubmit"])

        def unsure(what: str) -> str:
            """The message of a submission left `submitting` (`unsure_advice`), its ledger
            record written (one a rerun writes again)."""
            name = "unsure-" + operation.state["since"].replace(":", "").replace("+", "_")
            record(outdir, spec, run, task, instance, None, config["prices"], "unsure", name)
            console = provider_class(spec.provider).CONSOLE
            where = f"{console}; the ledger {Path(outdir) / LEDGER / run}"
            return unsure_advice(what, state, where, video, BRANCH)

        try:
            outcome = operation.settled() or asked(smk, spec, operation, image, prompt)
        except Retry as error:
            if error.unsure:  # a submission that may have been taken: `submitting` stays
                error = unsure(f"the submission got no operation id back ({error})")
            fail_job(f"{FAILURE}{instance} ({spec.key}): {error}")
        except NotResumable as error:
            if operation.state["status"] == "submitting":  # cut off: it may have been taken
                fail_job(f"{FAILURE}{instance} ({spec.key}): {unsure(str(error))}")
            command = resend_command(video, BRANCH)
            fail_job(f"{FAILURE}{instance} ({spec.key}): {error}. The command: {command}")
        except (ServiceError, TimeoutError) as error:
            fail_job(f"{FAILURE}{instance} ({spec.key}): {error}")
        write_atomic(video, lambda out: out.write(outcome.video or b""))
        meta = {
            "model": spec.key,
            "status": "ok" if outcome.ok else "error",
            **({} if outcome.ok else {"reason": outcome.reason}),
            "settings": spec.settings(),
            "image": str(image),
            "prompt": prompt,
            "operation": operation.state["operation"],
            "submitted_at": operation.state["submitted_at"],
            "submissions": operation.submissions,  # by this attempt: 0 when it resumed
            "seconds_of_video": seconds_of(spec.provider, spec.generation),
            "resolution": resolution_of(spec.provider, spec.generation),
            "seconds": {"wait": round(time.perf_counter() - started, 3)},
        }
        write_json(smk.output.meta, meta)
        print(json.dumps({"status": meta["status"], "operation": meta["operation"]}))
