"""The body of rule `generate_image_api`: one image API model's image of one instance.

The settings that decide the image come as params (`settings`: the registry entry's
provider, model id and generation; `prompt`); how it is reached (the key's variable, the
endpoint) is read from the registry when the job starts, how it is paced from the config
(`image_api`, which may be absent). The reply is kept in the cache (`cache.py`) before
any output is written, and a rerun with the same inputs takes it from there. The outputs:
`image.png` and `generation.json` with `status: ok`; or, where the provider refused, an
empty `image.png` and `generation.json` with `status: error` and the provider's reason (a
finished result: the image judge records it as the instance's error). A service failure
fails the job and writes nothing.
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
from workflow_scripts.image_api.provider import Refused, Retry
from workflow_scripts.image_api.providers import open_image_provider

FAILURE = "Image API failure: "
TIMEOUT_S = 300.0  # one request's reply (image models take minutes at their largest)


def request_image(smk, spec, image: Path, prompt: str) -> tuple[Reply, int]:
    """Ask the service once (retries of requests not taken aside): its reply, and the
    requests sent; a service failure fails the job."""
    model, instance = spec.key, smk.wildcards.instance
    key = os.environ.get(spec.api_key_env, "").strip()
    if not key:
        fail_job(f"{FAILURE}${spec.api_key_env} (the key of model {model!r}) is not set")
    outdir, options = Path(smk.config["outdir"]), smk.config.get("image_api") or {}
    limit = (options.get("requests_per_minute") or {}).get(spec.model_id)
    pace = limit and SharedRateLimit(outdir / CACHE / f"rate_{spec.model_id}", limit)
    client = open_image_provider(spec, key, pace, options.get("timeout_s", TIMEOUT_S))
    try:
        reply = Reply(image=client.generate(image, prompt))
    except Refused as refusal:
        reply = Reply(reason=refusal.reason)
    except Retry as error:
        taken = " (it may have been taken: paid)" if error.unsure else ""
        fail_job(f"{FAILURE}{instance} ({model}): {error}{taken}")
    except ServiceError as error:
        fail_job(f"{FAILURE}{instance} ({model}): {error}")
    finally:
        client.close()
    return reply, client.requests


def generate_image_api_job(smk) -> None:
    """Rule `generate_image_api`: the cached reply, else one request; see the module."""
    config, wildcards = smk.config, smk.wildcards
    spec = run_spec(config["model_registry"], wildcards.model, smk.params.settings)[0]
    with job_log(smk):
        image, prompt = Path(smk.input.image), smk.params.prompt
        image_sha = hashlib.sha256(image.read_bytes()).hexdigest()
        digest = state_key(settings=spec.settings(), prompt=prompt, image=image_sha)
        cache = ReplyCache(config["outdir"], spec.model_id, digest)
        started = time.perf_counter()
        reply, requests = cache.read(), 0
        cached = reply is not None
        if not cached:
            reply, requests = request_image(smk, spec, image, prompt)
            cache.write(reply, model=spec.key, task=wildcards.task, instance=wildcards.instance)
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
