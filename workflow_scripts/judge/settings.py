"""The judge settings a score depends on, light enough to import while Snakemake parses.

`judge_params` and `instance_params` give the VLM rules' params: everything that
determines an answer, and nothing that only changes how calls are made. The prompt
templates' texts (after `judge.prompts`) are part of them, per rule: a rule's params
hold only the templates of its own calls, so editing one reruns only the rule it feeds.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass

from workflow_scripts.common.layout import MAIN  # the judge of `judge:` itself
from workflow_scripts.judge.templates import load_templates

# Judge settings that change how or on which videos calls are made, never what they answer.
RUN_SETTINGS = (
    "enabled",
    "api_key_env",
    "base_url",
    "max_concurrency",
    "max_attempts",
    "timeout_s",
    "backoff_initial_s",
    "backoff_max_s",
    "requests_per_minute",
    "tokens_per_minute",
    "prompts",  # a folder: its templates' texts are in the params instead
    "checkpoints",  # which videos are judged (rule judge_checkpoints), not how
)
JUDGE_CALLS = ("completeness", "window", "verdict")  # rule judge; label_transitions: transition
# What a variant of `judges:` leaves to the main judge: whether the VLM stages run, and
# which checkpoint videos are judged (variants judge the final videos only).
NOT_IN_VARIANTS = ("enabled", "checkpoints")


@dataclass(frozen=True)
class Protocol:
    """The protocol's constants; `judge.protocol` in the config overrides them."""

    completeness_fps: float = 2.0
    round1_fps: float = 4.0
    round2_fps: float = 8.0
    window: int = 10  # frames per window call
    overlap: int = 1  # frames shared by consecutive windows
    radius: float = 0.5  # seconds re-sampled on each side of a nominated frame
    frame_long_side: int = 512
    image_long_side: int = 768

    def __post_init__(self):
        if not 0 <= self.overlap < self.window:
            raise ValueError(f"judge.protocol: need 0 <= overlap < window, got {self}")


def judge_params(judge_config: Mapping, calls=JUDGE_CALLS) -> str:
    """The judge settings that determine the answers of `calls` (not the key, endpoint or
    pacing), with their templates under `prompts`, as JSON."""
    settings = {k: v for k, v in judge_config.items() if k not in RUN_SETTINGS}
    settings["protocol"] = asdict(Protocol(**judge_config.get("protocol", {})))
    settings["prompts"] = load_templates(judge_config.get("prompts"), calls)
    return json.dumps(settings, sort_keys=True, ensure_ascii=False)


def variant_config(judge_config: Mapping, variant: Mapping) -> dict:
    """The judge settings of a variant (`judges.<name>`): its keys over `judge`'s, the
    protocol's constants merged key by key (a variant's `prompts` folder replaces the
    main judge's)."""
    merged = {**judge_config, **variant}
    merged["protocol"] = {**judge_config.get("protocol", {}), **variant.get("protocol", {})}
    return merged


def judge_configs(config: Mapping) -> dict[str, dict]:
    """Every judge of the run by name: `main` (`judge:`) first, then the variants."""
    judge = dict(config.get("judge", {}))
    variants = config.get("judges") or {}
    if MAIN in variants:
        raise ValueError(
            f"judges: {MAIN!r} is the main judge (`judge:`); name the variant otherwise"
        )
    return {MAIN: judge, **{name: variant_config(judge, v) for name, v in variants.items()}}


def instance_params(row: Mapping) -> dict:
    """What the judge reads of an instance: its id (`row.name`), task and level, its texts,
    and the paths of its input image and ground-truth image (None where there is none)."""
    texts = {key: row[key] for key in ("task", "goal", "checklist", "tier_standard", "gt_text")}
    images = {key: None if row[key] is None else str(row[key]) for key in ("image", "gt_image")}
    return {"instance": row.name, "level": int(row["level"]), **texts, **images}
