"""The model registry: `config/models.yaml` entries as `ModelSpec`s that build pipelines.

Every reader goes through here, with the schema's defaults filled in once (`with_defaults`):
the workflow (after checking the file), and a job resolving its run's model (`run_spec`).
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import json
from dataclasses import dataclass
from pathlib import Path

import jsonschema
import yaml

from vgi_models.families import FAMILIES, Family
from vgi_models.image_families import IMAGE_FAMILIES, ImageFamily
from vgi_models.runtime import trajectory_runtime
from vgi_models.sources import resolve

SCHEMA = Path(__file__).resolve().parents[1] / "config" / "schemas" / "models.schema.yaml"
# A model's kind: how its videos are made.
PIPELINE = "pipeline"  # a local diffusers pipeline (`family`), with denoising checkpoints
API = "api"  # a commercial video API (`provider`): made by the workflow, no checkpoints
VIDEOS = "videos"  # a folder of videos made elsewhere: no pipeline, no checkpoints
STATIC = "static"  # a shortcut baseline from the input image (held, noised, panned): no GPU
IMAGES = "images"  # a folder of an image model's images made elsewhere: the image branch
TINY = "tiny"  # a pipeline's `source`: randomly initialised weights, built from config
# A `source: static` baseline's settings beyond its frames and fps, by `motion`.
MOTION_SETTINGS = {
    "hold": (),
    "noise": ("motion", "noise_std", "noise_seed"),
    "pan": ("motion", "pan"),
    "swap": ("motion",),
}
API_FIELDS = ("provider", "model_id", "api_key_env", "base_url")
# What a job reads from the registry itself, not from its params: how the model runs or is
# reached, which changes no video (and so reruns nothing); of `runtime`, the approximate
# values are in its params too (`vgi_models.runtime.trajectory_runtime`), and must agree.
HOW_IT_RUNS = ("runtime", "resources", "api_key_env", "base_url")


@dataclass(frozen=True)
class ModelSpec:
    """One registry entry. `kind` says how its videos are made (`PIPELINE`, `API`, `VIDEOS`,
    `STATIC`), or that it is an image model whose images were made elsewhere (`IMAGES`);
    `source` is the registry's, for a pipeline where its weights are (`tiny`, a folder, a hub
    id). `generation` holds every setting that shapes the video; an entry with
    `source: videos` has none, only the `videos` folder it reads. An entry with `source: api`
    names its `provider` (veo, sora), the provider's `model_id`, the variable holding its key
    (`api_key_env`) and optionally an endpoint (`base_url`); its `generation` holds the
    provider's own settings, named as its SDK names them. An entry with `source: static` is
    a shortcut baseline made from the input image: its `generation` holds the clip's
    `num_frames`, `fps` and `motion` (hold, noise, pan, swap; docs/models.md).
    An entry with `source: images` reads its `images` folder. `output` says what it makes:
    `video`, or `image` (an image model: `source: images`, an image API, an image pipeline)."""

    key: str
    kind: str
    family: str | None
    source: str
    dtype: str
    generation: dict
    resources: dict
    runtime: dict
    lora: dict | None = None
    pipeline: str | None = None  # `family: diffusers_i2v`: the diffusers class, by name
    videos: str | None = None
    images: str | None = None
    output: str = "video"  # or "image": an image model (the image branch)
    provider: str | None = None
    model_id: str | None = None
    api_key_env: str | None = None
    base_url: str | None = None

    @property
    def generates(self) -> bool:
        """Whether the workflow makes this model's videos (a pipeline or a video API)."""
        return self.kind not in (VIDEOS, IMAGES)

    @property
    def denoises(self) -> bool:
        """Whether its videos come from a local pipeline, with denoising checkpoints."""
        return self.kind == PIPELINE and self.output == "video"

    @property
    def calls_api(self) -> bool:
        """Whether its videos come from a commercial video API."""
        return self.kind == API

    @property
    def tiny(self) -> bool:
        """Whether it is a pipeline with tiny random weights (no files to find)."""
        return self.kind == PIPELINE and self.source == TINY

    @property
    def pipeline_family(self) -> Family | ImageFamily:
        """The pipeline family (`vgi_models.families`; an image model's:
        `vgi_models.image_families`)."""
        family = (IMAGE_FAMILIES if self.output == "image" else FAMILIES)[self.family]
        return family.named(self.pipeline) if self.pipeline else family

    @property
    def steps(self) -> int:
        return self.generation["num_inference_steps"]

    def with_generation(self, **settings) -> ModelSpec:
        """The entry with `settings` over its generation settings (a bench's variant)."""
        return dataclasses.replace(self, generation=self.generation | settings)

    def settings(self) -> dict:
        """Everything in the entry that determines a generated video: of how a pipeline runs,
        its approximate runtime values (`vgi_models.runtime.trajectory_runtime`)."""
        if self.kind == VIDEOS:
            return {"source": VIDEOS, "videos": self.videos}
        if self.kind == IMAGES:
            return {"source": IMAGES, "images": self.images}
        if self.kind == STATIC:  # what its motion reads (a held image: frames and fps)
            keys = ("num_frames", "fps", *MOTION_SETTINGS[self.generation["motion"]])
            generation = {key: self.generation[key] for key in keys}
            return {"source": STATIC, "generation": generation}
        image = {"output": self.output} if self.output == "image" else {}
        if self.kind == API:  # not how it is reached: key variable, endpoint
            return {
                "source": API,
                "provider": self.provider,
                "model_id": self.model_id,
                "generation": self.generation,
                **image,
            }
        settings = {
            "family": self.family,
            "source": self.source,
            "dtype": self.dtype,
            "generation": self.generation,
            **image,
        }
        settings |= {"pipeline": self.pipeline} if self.pipeline else {}
        settings |= {"lora": self.lora} if self.lora else {}
        approximate = trajectory_runtime(self.runtime)
        return settings | ({"runtime": approximate} if approximate else {})

    def resolve_source(self) -> str:
        """The local weight directory; raises `FileNotFoundError` naming the model key."""
        return str(resolve(self.source, f"model {self.key!r}: weights"))

    def apply_lora(self, pipe) -> dict | None:
        """Load the entry's LoRA into `pipe`; a summary for generation.json, or None."""
        if self.lora is None:
            return None
        from vgi_models.lora import apply_lora

        return apply_lora(pipe, self.family, self.lora)

    def build(self):
        """The diffusers pipeline (a video or image family's) with tiny random or real weights."""
        import torch

        family = self.pipeline_family
        if self.tiny:
            return family.build_tiny(self.generation)
        return family.load(self.resolve_source(), self.generation, getattr(torch, self.dtype))


@functools.cache
def _schema() -> dict:
    return yaml.safe_load(SCHEMA.read_text(encoding="utf-8"))


def _fill_defaults(validator, properties, instance, schema):
    if isinstance(instance, dict):
        for name, subschema in properties.items():
            if "default" in subschema:
                instance.setdefault(name, copy.deepcopy(subschema["default"]))
    yield from jsonschema.Draft202012Validator.VALIDATORS["properties"](
        validator, properties, instance, schema
    )


_DefaultFiller = jsonschema.validators.extend(
    jsonschema.Draft202012Validator, {"properties": _fill_defaults}
)


def with_defaults(entries: dict) -> dict:
    """A copy of registry entries with the schema's defaults filled in at every depth (as
    Snakemake's `validate` fills them); it checks nothing."""
    entries = copy.deepcopy(entries)
    for _ in _DefaultFiller(_schema()).iter_errors(entries):
        pass
    return entries


def resolve_folders(entries: dict, roots: dict[str, str | None]) -> dict:
    """The entries with each `source: videos` or `source: images` folder given relative (an
    id of the dataset's published generations, say) taken under its root (`roots` by
    source: the config's `videos_root`, `images_root`; None: as given, from the working
    directory)."""
    resolved = {}
    for key, entry in entries.items():
        source = entry.get("source")
        folder, root = entry.get(source), roots.get(source)
        if source in (VIDEOS, IMAGES) and root and folder and not Path(folder).is_absolute():
            entry = entry | {source: str(Path(root) / folder)}
        resolved[key] = entry
    return resolved


def load_registry(entries: dict) -> dict[str, ModelSpec]:
    """Registry entries (schema-checked) keyed by model key, the schema's defaults filled in."""
    specs = {}
    for key, entry in with_defaults(entries).items():
        source = entry["source"]
        specs[key] = ModelSpec(
            key=key,
            kind=source if source in (API, VIDEOS, STATIC, IMAGES) else PIPELINE,
            family=entry.get("family"),
            source=source,
            dtype=entry["dtype"],
            generation=entry.get("generation", {}),
            resources=entry.get("resources", {}),
            runtime=entry["runtime"],
            lora=entry.get("lora"),
            pipeline=entry.get("pipeline"),
            videos=entry.get("videos"),
            images=entry.get("images"),
            output="image" if source == IMAGES else entry["output"],
            **{name: entry.get(name) for name in API_FIELDS},
        )
    return specs


def run_spec(registry: str | Path, model: str, settings: str) -> tuple[ModelSpec, dict | None]:
    """The model of one run as its job resolves it, and the denoising checkpoints to decode
    (None: a video API). What decides the video comes from the job's `settings` param
    (`ModelSpec.settings()` with the run's seed, and `denoise`); how it runs or is reached
    (`HOW_IT_RUNS`) from the registry file as it is when the job starts. A pipeline's
    approximate runtime values there must be those its params carry (`ValueError`): a job
    never makes its video under settings other than those it was scheduled with."""
    settings = json.loads(settings)
    denoise = settings.pop("denoise", None)
    scheduled = settings.pop("runtime", {})
    own = yaml.safe_load(Path(registry).read_text(encoding="utf-8"))[model]
    entry = settings | {name: own[name] for name in HOW_IT_RUNS if name in own}
    spec = load_registry({model: entry})[model]
    now = trajectory_runtime(spec.runtime)
    if spec.kind == PIPELINE and now != scheduled:
        raise ValueError(
            f"model {model!r}: its runtime in {registry} now has approximate settings {now}, "
            f"but this job was scheduled with {scheduled}: they change the video, so the job "
            "does not run under them; run Snakemake again (it reruns the jobs they change)"
        )
    return spec, denoise


def problems_of(
    specs: dict[str, ModelSpec], keys: list[str], denoise_steps: list[int]
) -> list[str]:
    """Every reason the selected models cannot run, each naming the model key."""
    found = []
    for key in keys:
        if key not in specs:
            found.append(f"models: {key!r} is not in the model registry ({', '.join(specs)})")
            continue
        spec = specs[key]
        if spec.kind in (VIDEOS, IMAGES):
            folder = spec.videos if spec.kind == VIDEOS else spec.images
            if not Path(folder).is_dir():
                found.append(f"model {key!r}: {spec.kind} folder not found ({folder})")
            continue
        if spec.calls_api or spec.kind == STATIC or spec.output == "image":
            continue  # API settings: checked with the instances; no checkpoints to decode
        beyond = [s for s in denoise_steps if s > spec.steps]
        if beyond:
            found.append(
                f"model {key!r}: denoise.steps {beyond} exceed its "
                f"num_inference_steps ({spec.steps})"
            )
    return found


def weight_problems(spec: ModelSpec) -> list[str]:
    """What a pipeline's generate jobs need on disk and cannot find (its weights, the LTX
    upsampler beside them, its LoRA), and what its family refuses to run (`Family.problems`),
    each naming the model key: checked when a run starts, for the models whose generate jobs
    are about to run (a plan needs no weights)."""
    found, key = [], spec.key
    source = TINY if spec.tiny else None
    if not spec.tiny:
        try:
            source = spec.resolve_source()
        except FileNotFoundError as err:
            found.append(str(err))
        else:
            stage = spec.generation.get("stage_2")  # LTX: the upsampler beside the weights
            if stage and not (Path(source) / stage["upsampler"]).is_dir():
                found.append(
                    f"model {key!r}: latent upsampler {stage['upsampler']}/ not in {source}"
                )
    if source:
        found += [
            f"model {key!r}: {p}" for p in spec.pipeline_family.problems(source, spec.generation)
        ]
    if spec.lora and spec.lora["path"] != TINY:
        from vgi_models.lora import lora_files

        try:
            lora_files(spec.family, spec.lora)
        except (FileNotFoundError, ValueError) as err:
            found.append(f"model {key!r}: {err}")
    return found
