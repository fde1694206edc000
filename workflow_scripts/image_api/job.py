"""The body of rule `generate_image_api`: one image API model's image of one instance.

The settings that decide the image come as params (`settings`: the registry entry's
provider, model id and generation; `prompt`); how it is reached (the key's variable, the
endpoint) is read from the registry when the job starts, how it is paced, waited for and
whether an unsure request may be sent once more from the config (`image_api`, which may be
absent). The request's attempt record is written before it leaves and its reply kept as it
came, before any conversion (`cache.py`); a rerun with the same inputs takes it from there
and never sends a request that may have been taken without `image_api.resubmit: true`.
The outputs: `image.png` and `generation.json` with `status: ok`; or, where the provider
refused or answered without an image it could hand over (billed), an empty `image.png` and
`generation.json` with `status: error` and the reason (a finished result: the image judge
records it as the instance's error). A service failure fails the job and writes nothing.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path

from vgi_models.registry import run_spec
from vgi_models.state import state_key, write_atomic
from workflow_scripts.common.files import write_json
from workflow_scripts.common.http import ServiceError
from workflow_scripts.common.logs import fail_job, job_log
from workflow_scripts.common.pacing import SharedRateLimit
from workflow_scripts.image_api.cache import CACHE, Reply, ReplyCache
from workflow_scripts.image_api.provider import NoImage, Refused, Retry, as_png
from workflow_scripts.image_api.providers import open_image_provider, provider_class
from workflow_scripts.paid.attempt import unsure_advice
from workflow_scripts.paid.ledger import write_record

FAILURE = "Image API failure: "
TIMEOUT_S = 300.0  # one request's reply (image models take minutes at their largest)
BRANCH = "image_api"  # the config's section, and its `resubmit`


def unsure(smk, spec, cache: ReplyCache, what: str) -> str:
    """The job's message for a request that may have been taken (see `unsure_advice`)."""
    console = provider_class(spec.provider).CONSOLE
    return unsure_advice(what, cache.record, console, smk.output.image, BRANCH)


def outcome_of(reply: Reply) -> str:
    """The ledger's outcome of a finished reply."""
    if reply.image is not None:
        return "billed"
    return "failed" if reply.reason.startswith("failed: ") else "refused"


def ledger(smk, spec, digest: str, attempt: dict, outcome: str) -> None:
    """The ledger's record of the request's attempt (`attempt`: its record in the cache),
    named by the request and attempt, so that a rerun writes the same one."""
    prices, wildcards = smk.config.get("prices") or {}, smk.wildcards
    entry = {
        "provider": spec.provider,
        "model": wildcards.model,
        "model_id": spec.model_id,
        "operation": None,
        "task": wildcards.task,
        "instance": wildcards.instance,
        "submitted_at": attempt.get("since"),
        "seconds": None,
        "resolution": spec.generation.get("size") or spec.generation.get("image_size"),
        "price_per_second": None,
        "cost": (prices.get("images") or {}).get(spec.model_id),
        "currency": prices.get("currency", "USD"),
        "output": "image",
        "outcome": outcome,
        "attempt": attempt.get("attempt", 1),
    }
    name = f"image-{digest[:16]}-{entry['attempt']}"
    write_record(smk.config["outdir"], wildcards.model, wildcards.task, wildcards.instance,
                 name, entry)  # fmt: skip


def converted(cache: ReplyCache, reply: bytes) -> Reply:
    """The kept `reply`'s image as PNG, or a billed failure where it does not decode."""
    try:
        return Reply(image=as_png(reply))
    except Exception as error:  # PIL's errors, or none where the bytes are no image at all
        return Reply(
            reason=f"failed: the reply is not an image ({type(error).__name__}: {error})"[:300]
        )


def request_image(smk, spec, cache: ReplyCache, digest: str, image: Path, prompt: str,
                  attempt: int) -> tuple[Reply, int]:  # fmt: skip
    """Send the request once (retries of a request not taken aside), its attempt recorded in
    `cache` before it leaves: the reply, and the requests sent; a service failure fails the
    job, an unsure one saying how to send it once more."""
    model, instance = spec.key, smk.wildcards.instance
    key = os.environ.get(spec.api_key_env, "").strip()
    if not key:
        fail_job(f"{FAILURE}${spec.api_key_env} (the key of model {model!r}) is not set")
    outdir, options = Path(smk.config["outdir"]), smk.config.get("image_api") or {}
    limit = (options.get("requests_per_minute") or {}).get(spec.model_id)
    pace = limit and SharedRateLimit(outdir / CACHE / f"rate_{spec.model_id}", limit)
    client = open_image_provider(spec, key, pace, options.get("timeout_s", TIMEOUT_S))
    before = cache.sending(attempt, model=model, task=smk.wildcards.task, instance=instance)
    try:
        reply = client.generate(image, prompt)
    except Refused as refusal:  # a finished answer: kept by the caller
        return Reply(reason=refusal.reason, billed=refusal.billed), client.requests
    except NoImage as error:
        failed = Reply(reason=f"failed: {error.reason}")
        cache.done(failed, kept=error.reply)
        return failed, client.requests
    except Retry as error:
        if error.unsure:
            ledger(smk, spec, digest, cache.state(), "unsure")
            fail_job(f"{FAILURE}{instance} ({model}): " + unsure(smk, spec, cache, str(error)))
        cache.not_taken(before)
        fail_job(f"{FAILURE}{instance} ({model}): {error} (not taken: a rerun sends it again)")
    except ServiceError as error:  # an error answer that refuses the request: not taken
        cache.not_taken(before)
        fail_job(f"{FAILURE}{instance} ({model}): {error}")
    finally:
        client.close()
    cache.answered(reply)
    return converted(cache, reply), client.requests


def generate_image_api_job(smk) -> None:
    """Rule `generate_image_api`: the kept reply, else one request; see the module."""
    config, wildcards = smk.config, smk.wildcards
    spec = run_spec(config["model_registry"], wildcards.model, smk.params.settings)[0]
    resubmit = bool((config.get("image_api") or {}).get("resubmit"))
    with job_log(smk):
        image, prompt = Path(smk.input.image), smk.params.prompt
        image_sha = hashlib.sha256(image.read_bytes()).hexdigest()
        digest = state_key(settings=spec.settings(), prompt=prompt, image=image_sha)
        cache = ReplyCache(config["outdir"], spec.model_id, digest)
        started = time.perf_counter()
        record, requests = cache.state(), 0
        status = record and record["status"]
        if status == "sending" and not resubmit:
            what = (
                f"the request sent at {record['since']} (attempt {record.get('attempt', 1)}) "
                "never got its reply kept (the job was killed or failed while it was out, or "
                "no answer came)"
            )
            ledger(smk, spec, digest, record, "unsure")
            fail_job(
                f"{FAILURE}{wildcards.instance} ({spec.key}): " + unsure(smk, spec, cache, what)
            )
        if status in (None, "sending") or (status in ("refused", "failed") and resubmit):
            attempt = (record or {}).get("attempt", 1 if record else 0) + 1
            reply, requests = request_image(smk, spec, cache, digest, image, prompt, attempt)
            cache.done(reply)
            if reply.billed:
                ledger(smk, spec, digest, cache.state(), outcome_of(reply))
        elif status == "answered":  # the reply kept, the job cut off before its end
            reply = converted(cache, cache.kept_reply())
            cache.done(reply)
            ledger(smk, spec, digest, cache.state(), outcome_of(reply))
        else:
            reply = cache.read()
        cached = requests == 0
        write_atomic(smk.output.image, lambda out: out.write(reply.image or b""))
        ok = reply.image is not None
        meta = {
            "model": spec.key,
            "status": "ok" if ok else "error",
            **({} if ok else {"reason": reply.reason}),
            "settings": spec.settings(),
            "image": str(image),
            "prompt": prompt,
            "requests": requests,  # sent by this attempt: 0 when the reply came from the cache
            "cached": cached,
            "seconds": {"request": round(time.perf_counter() - started, 3)},
        }
        write_json(smk.output.meta, meta)
        print(json.dumps({"status": meta["status"], "cached": meta["cached"]}))
