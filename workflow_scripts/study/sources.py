"""What making a model's videos costs, by how they are made (the registry's `source`).

One function per question, one branch per kind of source (`run.source`; `run.entry` is
the model's registry entry): a model the workflow runs on a GPU pays GPU-hours at
`prices.gpu_hour` (None: not priced); a model whose videos were made elsewhere
(`source: videos`) has nothing to make.
"""

from __future__ import annotations

from collections.abc import Mapping

from workflow_scripts.study.documents import Run


def video_price(run: Run, gpu_hours_per_video: float, prices: Mapping) -> float | None:
    """The price of one more video of `run` (None: not priced)."""
    if not run.generates:
        return 0.0
    return None if prices.get("gpu_hour") is None else gpu_hours_per_video * prices["gpu_hour"]


def generation_spent(run: Run, gpu_hours: float, prices: Mapping) -> float | None:
    """What the videos `run` made cost (None: not priced)."""
    if not run.generates:
        return 0.0
    return None if prices.get("gpu_hour") is None else gpu_hours * prices["gpu_hour"]


def token_cost(model: str, input_tokens: float, output_tokens: float, prices: Mapping):
    """The price of tokens of VLM `model` at `prices.tokens` (per million; None: not priced)."""
    price = (prices.get("tokens") or {}).get(model)
    if price is None:
        return None
    return (input_tokens * price["input"] + output_tokens * price["output"]) / 1e6
