"""The model registry: `config/models.yaml` entries as `ModelSpec`s that build pipelines."""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from vgi_models.sources import resolve

TINY = "tiny"
VIDEOS = "videos"  # a folder of videos made elsewhere: no pipeline, no checkpoints
API = "api"  # a commercial video API (`provider`): made by the workflow, no checkpoints
API_FIELDS = ("provider", "model_id", "api_key_env", "base_url")
FAMILIES = {
    "wan21": "vgi_models.families.wan",
    "wan22": "vgi_models.families.wan",
    "hunyuan15": "vgi_models.families.hunyuan15",
    "ltx23": "vgi_models.families.ltx23",
}
# `source: tiny`: each family's randomly initialised builder, in a module beside it.
TINY_BUILDERS = {family: f"{module}_tiny" for family, module in FAMILIES.items()}


@dataclass(frozen=True)
class ModelSpec:
    """One registry entry. `generation` holds every setting that shapes the video; an
    entry with `source: videos` has none, only the `videos` folder it reads. An entry with
    `source: api` names its `provider` (veo, sora), the provider's `model_id`, the variable
    holding its key (`api_key_env`) and optionally an endpoint (`base_url`); its
    `generation` holds the provider's own settings, named as its SDK names them."""

    key: str
    family: str | None
    source: str
    dtype: str
    generation: dict
    resources: dict
    runtime: dict
    lora: dict | None = None
    videos: str | None = None
    provider: str | None = None
    model_id: str | None = None
    api_key_env: str | None = None
    base_url: str | None = None

    @property
    def generates(self) -> bool:
        """Whether the workflow makes this model's videos (a pipeline or a video API)."""
        return self.source != VIDEOS

    @property
    def denoises(self) -> bool:
        """Whether its videos come from a local pipeline, with denoising checkpoints."""
        return self.source not in (VIDEOS, API)

    @property
    def module(self) -> ModuleType:
        """The family module (imported on first use: the DAG is built without torch)."""
        return importlib.import_module(FAMILIES[self.family])

    @property
    def steps(self) -> int:
        return self.generation["num_inference_steps"]

    def settings(self) -> dict:
        """Everything in the entry that determines a generated video (not how it runs)."""
        if not self.generates:
            return {"source": VIDEOS, "videos": self.videos}
        if self.source == API:  # not how it is reached: key variable, endpoint
            return {
                "source": API,
                "provider": self.provider,
                "model_id": self.model_id,
                "generation": self.generation,
            }
        settings = {
            "family": self.family,
            "source": self.source,
            "dtype": self.dtype,
            "generation": self.generation,
        }
        return settings | ({"lora": self.lora} if self.lora else {})

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
        """The diffusers pipeline with tiny random or real weights."""
        import torch

        if self.source == TINY:
            builder = importlib.import_module(TINY_BUILDERS[self.family])
            return builder.build_tiny(self.family, self.generation)
        return self.module.load(self.resolve_source(), self.generation, getattr(torch, self.dtype))


def load_registry(entries: dict) -> dict[str, ModelSpec]:
    """Registry entries (already schema-validated) keyed by model key."""
    return {
        key: ModelSpec(
            key=key,
            family=entry.get("family"),
            source=entry["source"],
            dtype=entry.get("dtype", "bfloat16"),
            generation=entry.get("generation", {}),
            resources=entry.get("resources", {}),
            runtime=entry.get("runtime", {}),
            lora=entry.get("lora"),
            videos=entry.get("videos"),
            **{name: entry.get(name) for name in API_FIELDS},
        )
        for key, entry in entries.items()
    }


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
        if not spec.generates:
            if not Path(spec.videos).is_dir():
                found.append(f"model {key!r}: videos folder not found ({spec.videos})")
            continue
        if not spec.denoises:  # a video API: its settings are checked against the instances
            continue
        beyond = [s for s in denoise_steps if s > spec.steps]
        if beyond:
            found.append(
                f"model {key!r}: denoise.steps {beyond} exceed its "
                f"num_inference_steps ({spec.steps})"
            )
        if spec.source != TINY:
            try:
                weights = Path(spec.resolve_source())
            except FileNotFoundError as err:
                found.append(str(err))
            else:
                stage = spec.generation.get("stage_2")  # LTX: the upsampler beside the weights
                if stage and not (weights / stage["upsampler"]).is_dir():
                    found.append(
                        f"model {key!r}: latent upsampler {stage['upsampler']}/ not in {weights}"
                    )
        if spec.lora and spec.lora["path"] != TINY:
            from vgi_models.lora import lora_files

            try:
                lora_files(spec.family, spec.lora)
            except (FileNotFoundError, ValueError) as err:
                found.append(f"model {key!r}: {err}")
    return found
