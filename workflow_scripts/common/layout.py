"""Where a run's documents live under the outdir (DESIGN, "Outputs").

A (model, instance)'s generation has its own folder; the VLM stages run per (model, task)
and write one folder per stage beside the instances' folders, one entry per instance:

    <outdir>/<model>/<task>/<instance>/                   video.mp4, denoise/, generation.json
    <outdir>/<model>/<task>/judge/<instance>/             completeness.json, rubric.json, score.json
    <outdir>/<model>/<task>/transitions/<instance>.json   the checkpoint pairs' labels
    <outdir>/<model>/<task>/judge_checkpoints/<instance>/ stepNN/{completeness,rubric,score}.json,
                                                          checkpoint_scores.json
    <outdir>/<model>/<task>/frames/<instance>/<video>/    NNNNN.jpg: the frames the VLM jobs
                                                          send of video.mp4 (`video`) and of
                                                          each checkpoint (`stepNN`), made
                                                          ahead by rule prepare_frames
    <outdir>/resume/<model>/<task>/<instance>/            <digest>.pt: a cut-off generate
                                                          job's resumable state (removed
                                                          when the job is done);
                                                          <digest>.json: a video API
                                                          operation (kept: vgi_models.state)
    <outdir>/ledger/<model>/<task>/<instance>/<time>.json one record per paid video API
                                                          submission (video_api.ledger)

A run under another input condition or another seed (DESIGN, "Input conditions and
seeds") has the same layout under its own run key in place of `<model>`:
`<model>@<condition>` (condition `default` left out), then `@seed<s>` for a seed other
than the registry's: `tiny_wan22@lineart`, `tiny_wan22@seed1`, `tiny_wan22@lineart@seed1`.
The main run (condition `default`, the registry's seed) keeps the plain `<model>`.

A judge variant (`judges.<name>`) scores the same videos; its documents live apart, by
name, in the main judge's layout (the main judge, `main`, keeps the paths above):

    <outdir>/judges/<name>/<model>/<task>/judge/<instance>/  completeness, rubric, score.json
"""

from __future__ import annotations

import re
from pathlib import Path

from workflow_scripts.common.files import read_json

# Never an instance id (<task>_lv<N>_<id>).
STAGES = ("judge", "transitions", "judge_checkpoints", "frames", "judge_image")
DEFAULT_CONDITION = "default"
CONDITION_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]*")  # and not seed<digits>, not default
SEED_PART = re.compile(r"seed(-?[0-9]+)")


def run_key(model: str, condition: str = DEFAULT_CONDITION, seed: int | None = None) -> str:
    """The folder name of a model's run under `condition` with `seed` (None: the registry's)."""
    parts = [model]
    if condition != DEFAULT_CONDITION:
        parts.append(condition)
    if seed is not None:
        parts.append(f"seed{seed}")
    return "@".join(parts)


def parse_run_key(key: str) -> tuple[str, str, int | None]:
    """(model, condition, seed) of a run key; seed None for the registry's."""
    model, *rest = key.split("@")
    seed = None
    if rest and (match := SEED_PART.fullmatch(rest[-1])):
        seed, rest = int(match[1]), rest[:-1]
    if len(rest) > 1:
        raise ValueError(f"not a run key: {key!r}")
    return model, rest[0] if rest else DEFAULT_CONDITION, seed


def condition_name_problem(name: str) -> str | None:
    """Why `name` cannot name a condition (it is part of folder names), or None."""
    if name == DEFAULT_CONDITION:
        return "`default` is the main run; it takes no overrides"
    if not CONDITION_NAME.fullmatch(name) or SEED_PART.fullmatch(name):
        return "a condition name is a letter then letters, digits or _, and not seed<N>"
    return None


# The outdir's folder of states kept outside the rules' outputs: a cut-off generate job's
# resumable state, a video API's operation.
RESUME = "resume"

# The batch rules' names begin so (rules/generate.smk: a job per batch of a model's instances)
BATCH_RULE = "generate_batch"

MAIN = "main"  # the main judge (`judge:`); `judges:` names the variants
VARIANTS = "judges"  # the folder under the outdir holding the variants' documents


def run_folder(outdir: str | Path, model: str, task: str, instance: str) -> Path:
    """The instance's generation: video.mp4, denoise/, generation.json."""
    return Path(outdir) / model / task / instance


GENERATION_FAILED = "generation failed: "  # a score's reason where no video was made

# What to do about a file of the outdir that does not read back (common.files.read_json,
# read_csv): for each kind of file, the rule that writes it again or the file to delete.
SELECTED_FIX = (
    "delete it, or add --forcerun select_instances to the command: rule select_instances "
    "writes it again"
)
GENERATION_FIX = (
    "delete it, and the next run makes the instance's video again (rule generate, a GPU "
    "job; for a video API model rule generate_api, which downloads its finished operation "
    "again)"
)
TABLE_FIX = "delete it, and the next run's rule tables writes it again"
STAGE_RULES = {"judge": "judge", "transitions": "label_transitions"}


def stage_fix(document: str | Path) -> str:
    """What to do about a VLM stage's document (score.json, transitions.json, ...) that
    does not read back: its (model, task)'s stage folder goes, and the rule writes it again."""
    document = Path(document)
    folder = next(parent for parent in document.parents if parent.name in STAGES)
    rule = STAGE_RULES.get(folder.name, folder.name)
    if rule == "judge" and len(folder.parents) > 3 and folder.parents[3].name == VARIANTS:
        rule = "judge_variant"
    return (
        f"delete the folder {folder}, and the next run's rule {rule} writes it again "
        "(its answered VLM calls come from the cache: none is paid twice)"
    )


def failed_generation(video: str | Path) -> str | None:
    """Why the video beside its generation.json was not made (a video API's refusal or
    failure: `status: error`, `video.mp4` left empty), or None."""
    meta = read_json(Path(video).parent / "generation.json", GENERATION_FIX, optional=True)
    if meta is None:
        return None
    return None if meta.get("status", "ok") == "ok" else meta.get("reason") or "unknown"


def stage_folder(outdir: str | Path, model: str, task: str, stage: str) -> Path:
    """The folder one VLM job (`stage` of STAGES) writes for a (model, task)."""
    return Path(outdir) / model / task / stage


def judge_folder(outdir: str | Path, model: str, task: str, judge: str = MAIN) -> Path:
    """The folder the judge named `judge` writes for a (model, task): rule `judge` for the
    main judge, rule `judge_variant` for a variant of `judges:`."""
    if judge == MAIN:
        return stage_folder(outdir, model, task, "judge")
    return stage_folder(Path(outdir) / VARIANTS / judge, model, task, "judge")


def judged(outdir: str | Path, model: str, task: str, instance: str, judge: str = MAIN) -> Path:
    """The judge's documents of the instance's video: completeness, rubric and score.json."""
    return judge_folder(outdir, model, task, judge) / instance


def score_file(outdir: str | Path, model: str, task: str, instance: str, judge: str = MAIN) -> Path:
    return judged(outdir, model, task, instance, judge) / "score.json"


def transitions_file(outdir: str | Path, model: str, task: str, instance: str) -> Path:
    return stage_folder(outdir, model, task, "transitions") / f"{instance}.json"


def checkpoint_scores_file(outdir: str | Path, model: str, task: str, instance: str) -> Path:
    folder = stage_folder(outdir, model, task, "judge_checkpoints")
    return folder / instance / "checkpoint_scores.json"


def frame_store(folder: str | Path, video: str | Path) -> Path:
    """Where rule prepare_frames puts the frames of `video` (an instance's video.mp4 or a
    checkpoint) inside its (model, task)'s `folder`: `<instance>/<video's stem>`."""
    video = Path(video)
    instance = video.parent.parent.name if video.parent.name == "denoise" else video.parent.name
    return Path(folder) / instance / video.stem


def documents(folders, name: str):
    """(model, task, instance, path) of each stage folder's per-instance documents: `name`
    inside an instance's folder (e.g. `score.json`), or `<instance>.json` (name None)."""
    for folder in map(Path, folders):
        model, task = folder.parts[-3:-1]
        paths = folder.glob("*.json") if name is None else folder.glob(f"*/{name}")
        for path in sorted(paths):
            instance = path.stem if name is None else path.parent.name
            yield model, task, instance, path
