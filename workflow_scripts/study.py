"""Everything the DAG needs, loaded and checked once before any job is scheduled."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pandas as pd

from vgi_models.registry import ModelSpec, load_registry, problems_of
from workflow_scripts.benchmark import load_instances, select_subset


class StudyError(ValueError):
    """All configuration and benchmark problems at once, one per line."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__(problems)
        self.problems = problems

    def __str__(self) -> str:
        lines = [f"{len(self.problems)} problem(s) found before scheduling any job:"]
        return "\n".join(lines + [f"  - {p}" for p in self.problems])


@dataclass(frozen=True)
class Study:
    """The selected models and instances, and the denoising checkpoints to decode."""

    models: dict[str, ModelSpec]
    instances: pd.DataFrame
    steps: tuple[int, ...]
    decode: str

    def generation_params(self, model: str) -> str:
        """The settings that determine a model's videos, as a stable JSON string."""
        settings = self.models[model].settings()
        settings["denoise"] = {"steps": list(self.steps), "decode": self.decode}
        return json.dumps(settings, sort_keys=True, ensure_ascii=False)


def load_study(config: dict, registry: dict) -> Study:
    """The study of a validated config; raises `StudyError` listing every problem."""
    bench, denoise = config["benchmark"], config["denoise"]
    specs = load_registry(registry)
    problems = problems_of(specs, config["models"], denoise["steps"])
    try:
        table = load_instances(
            bench["root"], bench["taxonomy"], bench["overlap"], bench["tasks"], bench["levels"]
        )
    except (ValueError, OSError) as err:  # BenchmarkError lists many, others one
        problems += getattr(err, "problems", [str(err)])
        table = None
    if problems:
        raise StudyError(problems)
    return Study(
        models={key: specs[key] for key in config["models"]},
        instances=select_subset(table, bench["subset"], bench["subset_seed"]),
        steps=tuple(sorted(denoise["steps"])),
        decode=denoise["decode"],
    )
