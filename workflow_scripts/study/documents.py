"""What a run's documents record it spent, read once per file version.

The study's description (`Study`, built by rules/study.smk) says which documents to look
for; `Documents` reads them (a file re-read only when its mtime changes, so the status
page can look again every few seconds). What a document records:

- `generation.json`: `seconds` (load, denoise, decode) of the attempt that finished, and
  under `attempts` every attempt's seconds (a resumed job's earlier, cut-off attempts);
- a judge's `score.json`, a `transitions/<instance>.json`: `calls` (requests sent, every
  attempt), `cached_calls` (cache hits), `tokens` (usage of every reply, cached ones
  included: what the document's calls cost when they were first paid);
- `judge_checkpoints/<instance>/checkpoint_scores.json`: one score per step under `steps`;
- an image model's (the image branch) `judge_image/<instance>/score.json`: as a judge's.

Input tokens are `prompt`; output tokens are `total - prompt` (Gemini's candidates plus
thinking, OpenAI's completion, which holds its reasoning), both billed as output.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from vgi_models.registry import IMAGES, PIPELINE, VIDEOS
from workflow_scripts.common.files import read_json
from workflow_scripts.common.layout import (
    MAIN,
    checkpoint_scores_file,
    run_folder,
    score_file,
    stage_folder,
    transitions_file,
)

# costs.csv's judge names: a model's generation, its transition labels, its judged
# checkpoints, an image model's image judge
GENERATE, LABELS, CHECKPOINTS, IMAGE = "generate", "labels", "checkpoints", "image"


@dataclass(frozen=True)
class Run:
    """One run key of the study: its model, how its videos (or images) come, its clip, its
    instances."""

    key: str
    model: str
    kind: str  # vgi_models.registry: PIPELINE, API, VIDEOS, STATIC, or IMAGES (made elsewhere)
    instances: dict  # instance -> task
    main: bool  # the model's main run (condition default, registry seed)
    output: str = "video"  # or "image": an image model (the image branch)
    frames: int | None = None  # clip length and rate (None: read from a video)
    fps: float | None = None
    width: int | None = None
    height: int | None = None
    # registry resources.runtime (minutes on an H20), with runtime.compile's warm-up
    runtime_min: float | None = None
    gpu_type: str | None = None  # registry resources.gpu_type (its GPU-hours' price)
    batch: int = 1  # registry resources.batch: videos per generate job (one load each)
    sample: str | None = None  # one of its videos or images (made elsewhere: clip, size)
    entry: dict = field(default_factory=dict)  # its registry entry (what a video costs)

    @property
    def generates(self) -> bool:
        """The workflow makes its videos (on a GPU, through a video API, or a held image)."""
        return self.kind not in (VIDEOS, IMAGES)

    @property
    def on_gpu(self) -> bool:
        """A local pipeline: GPU time."""
        return self.kind == PIPELINE

    @property
    def denoises(self) -> bool:
        """A local video pipeline: GPU time and denoising checkpoints."""
        return self.on_gpu and self.output == "video"


@dataclass(frozen=True)
class Study:
    """What the plan, the status and the costs look at (rules/study.smk builds it)."""

    outdir: str
    runs: dict  # run key -> Run
    judges: dict  # judge name (main, variants) -> settings (model, protocol)
    checkpoints: list = field(default_factory=list)  # judge.checkpoints steps
    pairs: list = field(default_factory=list)  # transition pairs
    frames_per_checkpoint: int = 4
    steps: list = field(default_factory=list)  # denoise.steps
    decode: str = "x0"
    judged: bool = True  # the VLM stages are part of the study

    @classmethod
    def from_dict(cls, data: dict) -> Study:
        runs = {key: Run(key=key, **run) for key, run in data["runs"].items()}
        return cls(**{**data, "runs": runs})

    def stages(self, run: Run) -> list[str]:
        """The VLM stages of a run, named as in costs.csv: each judge (the variants on main
        runs only), `labels` and `checkpoints` (runs with checkpoints; checkpoints: main
        only); an image model's: the image judge."""
        if not self.judged:
            return []
        if run.output == "image":
            return [IMAGE]
        names = [MAIN, *(j for j in self.judges if j != MAIN and run.main)]
        if run.denoises and self.pairs:
            names.append(LABELS)
        if run.denoises and run.main and self.checkpoints:
            names.append(CHECKPOINTS)
        return names

    def document(self, stage: str, run: Run, instance: str) -> Path:
        """The document stage `stage` writes for a run's instance."""
        task = run.instances[instance]
        if stage == IMAGE:
            return stage_folder(self.outdir, run.key, task, "judge_image") / instance / "score.json"
        if stage == LABELS:
            return transitions_file(self.outdir, run.key, task, instance)
        if stage == CHECKPOINTS:
            return checkpoint_scores_file(self.outdir, run.key, task, instance)
        return score_file(self.outdir, run.key, task, instance, stage)

    def generation(self, run: Run, instance: str) -> Path:
        """generation.json of a generated run's instance; video.mp4 (image.png) of one made
        elsewhere."""
        folder = run_folder(self.outdir, run.key, run.instances[instance], instance)
        made = "image.png" if run.output == "image" else "video.mp4"
        return folder / ("generation.json" if run.generates else made)

    def vlm_model(self, stage: str) -> str:
        """The VLM model id a stage calls (labels, checkpoints, images: the main judge's)."""
        return self.judges[stage if stage in self.judges else MAIN]["model"]


def generation_seconds(meta: dict) -> float:
    """A generate job's seconds: the finished attempt's load, denoise and decode, plus the
    seconds of the attempts cut off before it (`attempts` but its last)."""
    earlier = (meta.get("attempts") or [])[:-1]
    return sum(meta.get("seconds", {}).values()) + sum(a["seconds"] for a in earlier)


def spent(document: dict) -> dict:
    """calls, cached_calls, input_tokens, output_tokens of one VLM document (a checkpoint
    document: summed over its steps)."""
    parts = document.get("steps", [document])
    total = dict.fromkeys(("calls", "cached_calls", "input_tokens", "output_tokens"), 0)
    for part in parts:
        tokens = part.get("tokens") or {}
        prompt = tokens.get("prompt", 0)
        output = (
            tokens.get("total", 0) - prompt
            if tokens.get("total")
            else (tokens.get("candidates", 0) + tokens.get("thoughts", 0))
        )
        total["calls"] += part.get("calls", 0)
        total["cached_calls"] += part.get("cached_calls", 0)
        total["input_tokens"] += prompt
        total["output_tokens"] += output
    return total


class Documents:
    """Reads documents, each once per version (mtime); a missing file is None."""

    def __init__(self):
        self._cache: dict[Path, tuple[float, object]] = {}

    def read(self, path: Path):
        """The parsed JSON at `path` (a video or image: its size in bytes), or None if none
        (or it does not read back: counted as not made; the job that reads it says why)."""
        try:
            mtime = os.stat(path).st_mtime
        except OSError:
            return None
        cached = self._cache.get(path)
        if cached and cached[0] == mtime:
            return cached[1]
        try:
            value = path.stat().st_size if path.suffix in (".mp4", ".png") else read_json(path, "")
        except (OSError, ValueError):  # OutdirFileError included
            return None
        self._cache[path] = (mtime, value)
        return value
