"""Everything the DAG needs, loaded and checked once before any job is scheduled."""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from vgi_models.registry import (
    IMAGES,
    STATIC,
    VIDEOS,
    ModelSpec,
    load_registry,
    problems_of,
    resolve_folders,
)
from workflow_scripts.benchmark.conditions import load_conditions
from workflow_scripts.benchmark.image_check import ImageCheck
from workflow_scripts.benchmark.instances import load_instances, select_subset
from workflow_scripts.benchmark.made_elsewhere import SUFFIX, find_outputs, published_instances
from workflow_scripts.benchmark.paper import TABLE4, paper_row_problems
from workflow_scripts.common.files import write_text
from workflow_scripts.common.layout import DEFAULT_CONDITION, run_key
from workflow_scripts.common.logs import job_log
from workflow_scripts.common.outdir import outdir_problems
from workflow_scripts.image_api.providers import setting_problems as image_setting_problems
from workflow_scripts.video_api.providers import image_problems, setting_problems

COVERAGE = ["model", "output", "task", "level", "instance", "found", "looked"]


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
    """The selected models and instances, and the denoising checkpoints to decode.

    `videos` holds, for each model with `source: videos`, its video of every instance.
    `conditions` holds each input condition's instance table (the main run, `default`,
    is `instances`); `seeds` the config's `seeds` (None: each model's registry seed).
    `image_models` are the image branch's models (`image_models:`), `images` each one's
    image of every instance of `image_instances`. A model made elsewhere (`source: videos`
    or `images`) is judged on the instances its folder holds (`rows_of`, `image_rows_of`);
    `coverage` has a row per (such model, selected instance): `found` or not, and where
    it was looked for (`coverage_tables`).
    """

    models: dict[str, ModelSpec]
    instances: pd.DataFrame
    steps: tuple[int, ...]
    decode: str
    videos: dict[str, dict[str, str]] = field(default_factory=dict)
    conditions: dict[str, pd.DataFrame] = field(default_factory=dict)
    seeds: tuple[int, ...] | None = None
    image_models: dict[str, ModelSpec] = field(default_factory=dict)
    images: dict[str, dict[str, str]] = field(default_factory=dict)
    coverage: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=COVERAGE))

    @property
    def image_instances(self) -> pd.DataFrame:
        """The image branch's instances: the selected ones whose task ships an image prompt."""
        return self.instances[self.instances["image_prompt"].notna()]

    def rows_of(self, model: str, condition: str = DEFAULT_CONDITION) -> pd.DataFrame:
        """The instances a run of `model` covers under `condition`: a model made elsewhere
        has only those its folder holds."""
        rows = self.instances_of(condition)
        return rows[rows.index.isin(self.videos[model])] if model in self.videos else rows

    def image_rows_of(self, model: str) -> pd.DataFrame:
        """The image instances of image model `model` (made elsewhere: those it holds)."""
        rows = self.image_instances
        return rows[rows.index.isin(self.images[model])] if model in self.images else rows

    def registry_seed(self, model: str) -> int | None:
        return (self.models[model].generation or {}).get("seed")

    def seeds_of(self, model: str) -> list[int | None]:
        """The model's seeds, None for the registry's (its runs keep the plain paths); a
        model without a seed setting (videos made elsewhere, Sora) has its main run only."""
        if self.seeds is None or self.registry_seed(model) is None:
            return [None]
        own = self.registry_seed(model)
        return [None if seed == own else seed for seed in self.seeds]

    def instances_of(self, condition: str) -> pd.DataFrame:
        """The instance table of `condition` (`default`: the run's)."""
        return self.instances if condition == DEFAULT_CONDITION else self.conditions[condition]

    @property
    def runs(self) -> dict[str, tuple[str, str, int | None]]:
        """Every run key (`common.layout.run_key`) of the study: (model, condition, seed).

        Conditions and seeds apply to the models the workflow generates; a model with
        `source: videos` has its main run only."""
        runs = {}
        for model, spec in self.models.items():
            conditions = [DEFAULT_CONDITION, *(self.conditions if spec.generates else ())]
            for condition in conditions:
                for seed in self.seeds_of(model):
                    runs[run_key(model, condition, seed)] = (model, condition, seed)
        return runs

    @property
    def pipelines(self) -> list[str]:
        """The models whose videos (and denoising checkpoints) a local pipeline generates."""
        return [key for key, spec in self.models.items() if spec.denoises]

    @property
    def api(self) -> list[str]:
        """The models whose videos the workflow asks a video API for (no checkpoints)."""
        return [key for key, spec in self.models.items() if spec.calls_api]

    @property
    def static(self) -> list[str]:
        """The models whose video is the input image held still (a baseline)."""
        return [key for key, spec in self.models.items() if spec.kind == STATIC]

    def swapped(self, condition: str = DEFAULT_CONDITION) -> dict[str, str]:
        """Each instance of `condition` -> whose image a `motion: swap` baseline shows in
        its place: the next selected instance of its task (`next_in_task`)."""
        return next_in_task(self.instances_of(condition))

    @property
    def without_checkpoints(self) -> list[str]:
        """The models without denoising checkpoints: video APIs, videos made elsewhere, held
        images."""
        return [key for key, spec in self.models.items() if not spec.denoises]

    def generation_params(self, model: str, seed: int | None = None) -> str:
        """The settings that determine a model's videos (an image model's images), as a
        stable JSON string (`seed`: in place of the registry's)."""
        spec = self.models[model] if model in self.models else self.image_models[model]
        settings = copy.deepcopy(spec.settings())
        if seed is not None:
            settings["generation"]["seed"] = seed
        if spec.denoises:  # a video API's video has no checkpoints to decode
            settings["denoise"] = {"steps": list(self.steps), "decode": self.decode}
        return json.dumps(settings, sort_keys=True, ensure_ascii=False)


def load_study(config: dict, registry: dict, image_cache: str | None = None) -> Study:
    """The study of a validated config; raises `StudyError` listing every problem.

    `image_cache`: where the benchmark's decoded images are remembered (`ImageCheck`).
    """
    bench, denoise = config["benchmark"], config["denoise"]
    roots = {VIDEOS: config.get("videos_root"), IMAGES: config.get("images_root")}
    specs = load_registry(resolve_folders(registry, roots))
    image_keys = config.get("image_models") or []
    problems = outdir_problems(config["outdir"], bench["root"])
    problems += problems_of(specs, [*config["models"], *image_keys], denoise["steps"])
    problems += output_problems(specs, config["models"], image_keys)
    problems += paper_row_problems(registry, config["models"], bench.get("paper_table"))
    problems += paper_row_problems(registry, image_keys, bench["paper_image_table"], TABLE4)
    try:
        table = load_instances(
            *(bench[key] for key in ("root", "taxonomy", "overlap", "tasks", "levels")),
            image_cache=image_cache,
        )
        if bench["subset"] == "published":
            table, found = published_subset(table, roots)
            problems += found
            table = None if found else table
        else:
            table = select_subset(table, bench["subset"], bench["subset_seed"])
    except (ValueError, OSError) as err:  # BenchmarkError lists many, others one
        problems += getattr(err, "problems", [str(err)])
        table = None
    models = {key: specs[key] for key in config["models"] if key in specs}
    conditions = {}
    if table is not None and config.get("conditions"):
        with ImageCheck(image_cache) as check:
            conditions, found = load_conditions(config["conditions"], table, check)
        problems += found
    if table is not None:
        problems += api_problems(models, [table, *conditions.values()], image_cache)
    videos, coverage = {}, []
    for key, spec in models.items():
        if table is not None and spec.kind == VIDEOS and Path(spec.videos).is_dir():
            videos[key], found = held_outputs(key, spec.videos, table, "video", coverage)
            problems += found
    image_models = {key: specs[key] for key in image_keys if key in specs}
    for key, spec in image_models.items():
        if spec.calls_api:
            problems += image_setting_problems(key, spec.provider, spec.model_id, spec.generation)
    images = {}
    if table is not None and image_models:
        image_table = table[table["image_prompt"].notna()]
        if image_table.empty:
            tasks = ", ".join(sorted(set(table["task"])))
            problems.append(
                f"image_models: none of the selected tasks ({tasks}) ships an image prompt "
                f"({bench['root']}/<task>/prompt/image_gen_prompt/<task>.txt): the image "
                "branch has no instances"
            )
        for key, spec in image_models.items():
            if spec.kind == IMAGES and Path(spec.images).is_dir():
                images[key], found = held_outputs(key, spec.images, image_table, "image", coverage)
                problems += found
    if table is not None:
        problems += swap_problems(models, {DEFAULT_CONDITION: table, **conditions})
    if problems:
        raise StudyError(problems)
    return Study(
        models=models,
        instances=table,
        steps=tuple(sorted(denoise["steps"])),
        decode=denoise["decode"],
        videos=videos,
        conditions=conditions,
        seeds=tuple(config["seeds"]) if config.get("seeds") else None,
        image_models=image_models,
        images=images,
        coverage=pd.DataFrame(coverage, columns=COVERAGE),
    )


def next_in_task(rows: pd.DataFrame) -> dict[str, str]:
    """Each instance -> the next instance of its task in `rows` (by id; the last takes the
    first): another instance of the same task, the same one only where the task has one."""
    swapped = {}
    for _, group in rows.groupby("task", sort=False):
        ordered = sorted(group.index)
        swapped |= dict(zip(ordered, ordered[1:] + ordered[:1], strict=True))
    return swapped


def swap_problems(models: dict[str, ModelSpec], tables: dict[str, pd.DataFrame]) -> list[str]:
    """A `motion: swap` baseline needs another selected instance of each task it covers."""
    swaps = [key for key, spec in models.items() if spec.generation.get("motion") == "swap"]
    problems = []
    for condition, rows in tables.items() if swaps else ():
        where = "" if condition == DEFAULT_CONDITION else f" (condition {condition})"
        counts = rows["task"].value_counts()
        problems += [
            f"model(s) {', '.join(swaps)} (motion: swap) show another instance of the same "
            f"task, but task {task} has one selected instance{where}: select more "
            "(benchmark.levels, subset) or leave these models out"
            for task in sorted(counts[counts < 2].index)
        ]
    return problems


def held_outputs(
    key: str, folder: str, table: pd.DataFrame, output: str, coverage: list[dict]
) -> tuple[dict[str, str], list[str]]:
    """A model made elsewhere: its file of each selected instance its folder holds, and the
    problems (two files for one instance; a folder holding none of the selection). Each
    selected instance is added to `coverage`, found or not."""
    held, problems, missing = find_outputs(key, folder, table, output)
    for instance, row in table.iterrows():
        coverage.append(
            {
                "model": key,
                "output": output,
                "task": row["task"],
                "level": int(row["level"]),
                "instance": instance,
                "found": instance not in missing,
                "looked": missing.get(instance, held.get(instance)),
            }
        )
    if len(table) and not held and not problems:
        problems.append(
            f"model {key!r}: its folder {folder} holds no {output} of the {len(table)} selected "
            f"instances (looked for <task>/[<prefix>_]<instance>{SUFFIX[output]}, e.g. "
            f"{next(iter(missing.values()))}): check the entry's `{output}s` folder, "
            f"{output}s_root and benchmark.tasks, levels and subset"
        )
    return held, problems


def published_subset(
    table: pd.DataFrame, roots: dict[str, str | None]
) -> tuple[pd.DataFrame, list[str]]:
    """`benchmark.subset: published`: the instances of `table` that the published
    generations under `videos_root` and `images_root` hold a file of (any model's), and
    the problems (neither root set, a root that is not a folder, none held)."""
    keys = {VIDEOS: "videos_root", IMAGES: "images_root"}
    given = {kind: root for kind, root in roots.items() if root}
    if not given:
        return table.iloc[:0], [
            "benchmark.subset: 'published' reads the instances the paper judged from the "
            "published generations, but neither videos_root nor images_root is set (the "
            "dataset's eval_res/video_model_res and eval_res/image_model_res)"
        ]
    problems = [
        f"benchmark.subset: 'published' reads the published generations, but {keys[kind]} "
        f"({root}) is not a folder"
        for kind, root in given.items()
        if not Path(root).is_dir()
    ]
    if problems:
        return table.iloc[:0], problems
    outputs = {"video" if kind == VIDEOS else "image": root for kind, root in given.items()}
    held = published_instances(outputs, table)
    if not held:
        where = " and ".join(f"{keys[kind]} ({root})" for kind, root in given.items())
        problems.append(
            f"benchmark.subset: 'published': no model folder under {where} holds a file "
            "(<model>/<task>/<instance>.mp4 or .png) of the selected tasks and levels"
        )
    return table[table.index.isin(held)], problems


def output_problems(specs: dict[str, ModelSpec], models: list[str], image_models: list[str]):
    """Each image model listed under `models` and each video model under `image_models`."""
    found = [
        f"models: {key!r} is an image model (source: {specs[key].kind}): list it under image_models"
        for key in models
        if key in specs and specs[key].output == "image"
    ]
    found += [
        f"image_models: {key!r} is a video model: list it under models"
        for key in image_models
        if key in specs and specs[key].output != "image"
    ]
    return found


def api_problems(
    models: dict[str, ModelSpec], tables: list[pd.DataFrame], image_cache: str | None
) -> list[str]:
    """Every video API model's settings the provider refuses, and every input image (of
    the run and of each condition) whose aspect does not fit them, by instance."""
    found = []
    apis = {key: spec for key, spec in models.items() if spec.calls_api}
    for key, spec in apis.items():
        own = setting_problems(key, spec.provider, spec.model_id, spec.generation)
        found += own
        if own:
            continue
        with ImageCheck(image_cache) as check:
            for table in tables:
                sizes = table["image"].map(check.size)
                found += image_problems(key, spec.provider, spec.generation, sizes)
    return list(dict.fromkeys(found))


def select_instances_job(smk) -> None:
    """Rule `select_instances`: write the chosen instance ids with their task and level."""
    ids = pd.Series(smk.params.ids, name="instance")
    table = ids.str.extract(r"^(?P<task>.+)_lv(?P<level>\d+)_(?P<id>.+)$")
    table.insert(0, "instance", ids)
    table["subset"] = smk.params.subset
    table["subset_seed"] = smk.params.seed
    with job_log(smk):
        write_text(smk.output[0], table.to_csv(index=False))
        print(f"{len(table)} instances selected ({smk.params.subset}, seed {smk.params.seed})")
