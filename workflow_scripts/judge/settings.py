"""The judge settings a score depends on, light enough to import while Snakemake parses.

`judge_params` and `instance_params` give the `judge` rule's params: everything that
determines a score, and nothing that only changes how calls are made.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass

# Judge settings that change how calls are made, never what they answer.
RUN_SETTINGS = (
    "enabled",
    "api_key_env",
    "base_url",
    "max_concurrency",
    "max_attempts",
    "timeout_s",
    "backoff_initial_s",
    "backoff_max_s",
)


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


def judge_params(judge_config: Mapping) -> str:
    """The judge settings that determine a score (not the key, endpoint or pacing), as JSON."""
    settings = {k: v for k, v in judge_config.items() if k not in RUN_SETTINGS}
    settings["protocol"] = asdict(Protocol(**judge_config.get("protocol", {})))
    return json.dumps(settings, sort_keys=True, ensure_ascii=False)


def instance_params(row: Mapping) -> str:
    """The texts of an instance the judge reads (its images are rule inputs), as JSON."""
    keys = ("goal", "checklist", "tier_standard", "gt_text")
    return json.dumps({key: row[key] for key in keys}, ensure_ascii=False)
