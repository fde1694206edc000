"""Every price of a study, in one place, from the config's `prices` table.

- a video of a video API model (`source: api`): seconds of video asked for x
  `prices.video_seconds[<model id>]` (one price a second, or prices by resolution or size);
  what the cost ledger records per submission, what the plan prices videos left at;
- a GPU-hour of a model the workflow runs on a GPU: `prices.gpu_hour`, one price for every
  GPU or prices by GPU type (the model's registry `resources.gpu_type`, any case);
- an image of an image API model (`source: api`, `output: image`): `prices.images[<model
  id>]`, once per paid request the ledger records (an image, a billed refusal or failure, an
  unsure attempt; a rerun takes its kept reply and adds none);
- tokens of a VLM model: `prices.tokens[<model>]` (`input`, `output`, per million);
- a model whose videos were made elsewhere (`source: videos`) has nothing to make.

None (NaN for a ledger's per-second price) where the table has no price; `unpriced`
names what the table leaves out.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping

import pandas as pd

from vgi_models.registry import API, STATIC
from workflow_scripts.video_api.ledger import price_per_second
from workflow_scripts.video_api.providers import resolution_of, seconds_of


def cost_per_video(provider: str, model_id: str, generation: dict, prices: Mapping) -> float:
    """What one video of an API model (its registry `provider`, `model_id`, `generation`)
    costs: price per second x seconds asked for; NaN when it is not priced."""
    price = price_per_second(model_id, resolution_of(provider, generation), prices)
    return price * seconds_of(provider, generation)


def gpu_cost(hours: float, gpu_type: str | None, prices: Mapping) -> float | None:
    """The price of `hours` GPU-hours on `gpu_type`: at `prices.gpu_hour` where it is one
    number, else at its price for that type (None: not priced, or no type)."""
    price = prices.get("gpu_hour")
    if isinstance(price, Mapping):
        by_type = {str(name).lower(): value for name, value in price.items()}
        price = by_type.get(gpu_type.lower()) if gpu_type else None
    return None if price is None else hours * price


def token_cost(model: str, input_tokens: float, output_tokens: float, prices: Mapping):
    """The price of tokens of VLM `model` (None: not priced)."""
    price = (prices.get("tokens") or {}).get(model)
    if price is None:
        return None
    return (input_tokens * price["input"] + output_tokens * price["output"]) / 1e6


def video_price(run, gpu_hours_per_video: float, prices: Mapping) -> float | None:
    """The price of one more video (image) of `run` (a `documents.Run`; None: not priced)."""
    if not run.generates or run.kind == STATIC:
        return 0.0
    if run.kind == API and run.output == "image":
        return image_price(run, prices)
    if run.kind == API:
        entry = run.entry
        cost = cost_per_video(entry["provider"], entry["model_id"], entry["generation"], prices)
        return None if math.isnan(cost) else cost
    return gpu_cost(gpu_hours_per_video, run.gpu_type, prices)


def image_price(run, prices: Mapping) -> float | None:
    """The price of one image of an image API model (None: not priced)."""
    return (prices.get("images") or {}).get(run.entry["model_id"])


def generation_spent(run, gpu_hours: float, prices: Mapping, ledger: pd.DataFrame, made=0):
    """(paid requests, cost) of what `run` made: an API model's, video or image, from the
    `ledger` (its records of this run key; cost None where a record is not priced); an image
    API's without any record (made before images were recorded), its `made` images at its
    price; else no requests and the GPU-hours' price."""
    if not run.generates or run.kind == STATIC:
        return 0, 0.0
    if run.kind == API and run.output == "image" and not (ledger["model"] == run.key).any():
        price = image_price(run, prices)
        return made, None if price is None else made * price
    if run.kind == API:
        mine = ledger[ledger["model"] == run.key]
        priced = mine["cost"].notna().all()
        return len(mine), float(mine["cost"].sum()) if priced else None
    return 0, gpu_cost(gpu_hours, run.gpu_type, prices)


def total(costs) -> float | None:
    """The sum of the priced costs among `costs` (None: none priced)."""
    priced = [cost for cost in costs if cost is not None]
    return sum(priced) if priced else None


def unpriced(study, prices: Mapping) -> list[str]:
    """What the study's costs leave out for want of a price (`study`: a `documents.Study`),
    a line each: GPU-hours by GPU type, an API model's videos or images, a VLM's tokens."""
    by_type = isinstance(prices.get("gpu_hour"), Mapping)
    gpu, lines = defaultdict(list), []
    for run in study.runs.values():
        if video_price(run, 1.0, prices) is not None:
            continue
        if run.on_gpu:
            gpu[run.gpu_type if by_type else ""].append(run.key)
        elif run.output == "image":
            lines.append(f"images of {run.key} not priced (prices.images)")
        else:
            lines.append(f"videos of {run.key} not priced (prices.video_seconds)")
    for gpu_type, keys in gpu.items():
        what = f"of {gpu_type or 'models without resources.gpu_type'} " if by_type else ""
        lines.append(f"GPU-hours {what}not priced (prices.gpu_hour): {', '.join(keys)}")
    models = {study.vlm_model(stage) for run in study.runs.values() for stage in study.stages(run)}
    missing = sorted(model for model in models if token_cost(model, 0, 0, prices) is None)
    return lines + [f"tokens of {model} not priced (prices.tokens)" for model in missing]
