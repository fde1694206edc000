"""The judge settings a score depends on, light enough to import while Snakemake parses.

`judge_params` and `instance_params` give the VLM rules' params: everything that
determines an answer, and nothing that only changes how calls are made. The prompt
templates' texts (after `judge.prompts`) are part of them, per rule: a rule's params
hold only the templates of its own calls, so editing one reruns only the rule it feeds.
With `judge.official_prompts` (the video judge's calls built by a checkout of the official
repository, `official`), the SHA-256 of the checkout's module is, not where it lies.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path

import yaml

from workflow_scripts.common.layout import MAIN  # the judge of `judge:` itself
from workflow_scripts.judge import official
from workflow_scripts.judge.templates import load_templates

# Which tasks' rubric windows get which ground truth (DESIGN, "Judge protocol"): data, in
# a file a user can replace (`judge.protocol.routing`: a path, or the mapping itself).
ROUTING_FILE = Path(__file__).resolve().parents[2] / "tasks" / "judge_routing.yaml"
ROUTING_KEYS = ("gt_image", "gt_text")
CHOICES = {
    "verdict": ("official", "strict"),
    "frames": ("official", "nearest"),
    "failures": ("official", "strict"),
    "sampling": ("adaptive", "even"),
    "batching": ("windows", "all_at_once"),
}


def load_routing(routing: str | Path | Mapping | None = None) -> dict[str, list[str]]:
    """`{gt_image: [task, ...], gt_text: [task, ...]}` from a mapping, a YAML file, or
    (None) the default file; a key left out routes nothing."""
    where = ROUTING_FILE if routing is None else routing
    if isinstance(where, (str, Path)):
        try:
            with open(where, encoding="utf-8") as f:
                where = yaml.safe_load(f) or {}
        except (OSError, yaml.YAMLError) as error:
            raise ValueError(f"judge.protocol.routing: cannot read {where} ({error})") from None
    if not isinstance(where, Mapping):
        where = {"(not a mapping)": where}
    unknown = set(where) - set(ROUTING_KEYS)
    lists = {key: where.get(key) or [] for key in ROUTING_KEYS}
    if unknown or not all(
        isinstance(v, list) and all(isinstance(t, str) for t in v) for v in lists.values()
    ):
        raise ValueError(
            f"judge.protocol.routing: expected {{gt_image: [task, ...], gt_text: [task, ...]}}"
            f", got {dict(where)!r} ({routing or ROUTING_FILE})"
        )
    return {key: sorted(set(v)) for key, v in lists.items()}


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
    "official_prompts",  # a checkout: its module's digest is in the params instead
    "checkpoints",  # which videos are judged (rule judge_checkpoints), not how
)
JUDGE_CALLS = ("completeness", "window", "verdict")  # rule judge; label_transitions: transition


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
    # How replies, frames and failures are taken: `official` as the benchmark's own judge,
    # the other choice our stricter rule (README, "The VLM judge").
    verdict: str = "official"  # strict: ask again for a left-out item; bounds enforced
    frames: str = "official"  # nearest: the nearest frame, the last frame always shown
    failures: str = "official"  # strict: any failed call makes the instance an error
    # The official judge's ablation switches (the paper's Table 3).
    sampling: str = "adaptive"  # even: one pass at even_fps, no round 2
    even_fps: float = 4.0
    batching: str = "windows"  # all_at_once: one call per round (per round-2 interval)
    routing: dict = field(default_factory=load_routing)  # GT routing of the windows

    def __post_init__(self):
        if not 0 <= self.overlap < self.window:
            raise ValueError(f"judge.protocol: need 0 <= overlap < window, got {self}")
        for name, choices in CHOICES.items():
            if getattr(self, name) not in choices:
                raise ValueError(
                    f"judge.protocol.{name}: {getattr(self, name)!r} is not one of {choices}"
                )
        object.__setattr__(self, "routing", load_routing(self.routing))


def judge_params(judge_config: Mapping, calls=JUDGE_CALLS) -> str:
    """The judge settings that determine the answers of `calls` (not the key, endpoint or
    pacing), with their templates under `prompts` and the official module's digest under
    `official_prompts` (a ValueError naming the setting where the checkout lacks what is
    needed), as JSON."""
    settings = {k: v for k, v in judge_config.items() if k not in RUN_SETTINGS}
    settings["protocol"] = asdict(Protocol(**judge_config.get("protocol", {})))
    settings["prompts"] = load_templates(judge_config.get("prompts"), calls)
    checkout = judge_config.get("official_prompts")
    if checkout and set(calls) & set(JUDGE_CALLS):  # the video judge's calls only
        settings["official_prompts"] = official.digest(checkout)
    return json.dumps(settings, sort_keys=True, ensure_ascii=False)


# The protocol constants that choose a video's frames and their size (rule prepare_frames).
FRAME_SETTINGS = ("completeness_fps", "round1_fps", "round2_fps", "radius", "frame_long_side")
FRAME_SETTINGS += ("frames", "sampling", "even_fps")


def frame_params(judge_config: Mapping) -> str:
    """The main judge's settings that determine which frames it sends, as JSON."""
    protocol = asdict(Protocol(**judge_config.get("protocol", {})))
    return json.dumps({key: protocol[key] for key in FRAME_SETTINGS}, sort_keys=True)


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


def image_instance_params(row: Mapping) -> dict:
    """What the image judge reads of an instance: its id, task and level, the image prompt
    (the task specification), the reference text and answer, and the paths of its input and
    reference images (None where there is none)."""
    texts = {key: row[key] for key in ("task", "image_prompt", "gt_text", "answer")}
    images = {key: None if row[key] is None else str(row[key]) for key in ("image", "gt_image")}
    return {"instance": row.name, "level": int(row["level"]), **texts, **images}
