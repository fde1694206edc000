"""The published folder's files and metadata: one row per video or checkpoint video.

    <publish>/<model>/metadata.parquet                    one row per file below it
    <publish>/<model>/<run>/<task>/<instance>/video.mp4   the run's video (<run>: its run key)
    <publish>/<model>/<run>/<task>/<instance>/denoise/stepNN[_xt].mp4   its checkpoints

Files are hard links of the outdir's where the file system allows (no second copy of a
study's videos), else copies. Each row carries what a reader needs without this workflow:
the instance's task, level, domain and skill tags, the run's condition and seed, a digest of
the settings that made the video, the step (none for the final video), the judge's scores,
its checklist with each item's violations and its written verdict, and for a checkpoint the
label of the pair that ends at it (the human label where one was imported). The table
itself is written by `publish.metadata`.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from collections.abc import Iterator, Mapping
from pathlib import Path

from vgi_models.video import checkpoint_name
from workflow_scripts.common import layout
from workflow_scripts.common.files import read_json

# score.json's scores, by their column names (`score`: the final score)
SCORES = {
    "score": "final",
    "completeness": "completeness",
    "rubric": "rubric",
    "tier": "tier",
    "strict_success": "strict_success",
}
NOT_JUDGED = dict.fromkeys((*SCORES, "rubric_items", "verdict", "judge_model_version"))
NO_LABEL = dict.fromkeys(
    ("transition_from", "transition_label", "transition_source", "human_label")
)
DECODED = {"x0": ["x0"], "xt": ["xt"], "both": ["x0", "xt"]}  # denoise.decode: the files


def settings_digest(settings: str) -> str:
    """A short digest of a run's generation settings (the JSON its jobs compare)."""
    return hashlib.sha256(settings.encode()).hexdigest()[:16]


def link_or_copy(source: Path, target: Path) -> None:
    """`target` as a hard link of `source`, or a copy where linking is not possible."""
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(source, target)
    except OSError:
        shutil.copy2(source, target)


def _document(path: Path) -> dict | None:
    return read_json(path, layout.stage_fix(path), ["status"], optional=True)


def judged(folder: Path, checklist: list[str]) -> dict:
    """The row's judge columns from a judged folder (score.json, rubric.json): the scores,
    each checklist item with its violations and the verdict's evidence, the verdict's
    reasoning (the reason where the judge wrote an error). Empty where the video was not
    judged or judged with an error (never 0)."""
    score = _document(folder / "score.json")
    if score is None:
        return {"judge_status": "not judged", **NOT_JUDGED}
    ok = score["status"] == "ok"
    verdict = ((_document(folder / "rubric.json") or {}) if ok else {}).get("polish") or {}
    evidence = {entry.get("index"): entry.get("evidence") for entry in verdict.get("checklist", [])}
    violations = score.get("violations") or []
    return {
        "judge_status": score["status"],
        **{column: score.get(key) if ok else None for column, key in SCORES.items()},
        "rubric_items": [
            {
                "item": item,
                "violations": violations[k] if k < len(violations) else None,
                "evidence": evidence.get(k + 1),
            }
            for k, item in enumerate(checklist)
        ]
        if ok
        else None,
        "verdict": verdict.get("overall_reasoning") if ok else score.get("reason"),
        "judge_model_version": score.get("model_version"),
    }


def labels_by_step(path: Path) -> dict[int, dict]:
    """The transition label of each checkpoint step: the pair's that ends at it."""
    document = _document(path) or {}
    return {
        pair["to"]: {
            "transition_from": pair["from"],
            "transition_label": pair.get("label"),
            "transition_source": pair.get("source"),
            "human_label": pair.get("human_label"),
        }
        for pair in document.get("pairs", [])
    }


def run_rows(outdir: Path, run: str, info: Mapping, instances: Mapping) -> Iterator[tuple]:
    """(source file, file name under the model's folder, row) for the video of each of the
    run's instances (`info["instances"]`) and each of its checkpoint videos (`info["steps"]`
    decoded as `info["decode"]`; the steps of `info["judged_steps"]` judged)."""
    kinds = DECODED.get(info.get("decode"), [])
    for instance in info["instances"]:
        entry = instances[instance]
        task = entry["task"]
        folder = layout.run_folder(outdir, run, task, instance)
        common = {
            "model": info["model"],
            "run": run,
            "condition": info["condition"],
            "seed": info["seed"],
            "settings_digest": info["digest"],
            "task": task,
            "instance": instance,
            "level": int(entry["level"]),
            "domain": entry["domain"],
            "skills": list(entry["skills"]),
        }
        name, checklist = f"{run}/{task}/{instance}", list(entry["checklist"])
        final = judged(layout.judged(outdir, run, task, instance), checklist)
        yield (
            folder / "video.mp4",
            f"{name}/video.mp4",
            {**common, "step": None, "estimate": None, **final, **NO_LABEL},
        )
        labels = labels_by_step(layout.transitions_file(outdir, run, task, instance))
        scored = layout.checkpoint_scores_file(outdir, run, task, instance).parent
        for step in info.get("steps", []):
            for kind in kinds:
                file = checkpoint_name(step, kind)
                judge = (
                    judged(scored / f"step{step:02d}", checklist)
                    if kind == "x0" and step in info.get("judged_steps", [])
                    else {"judge_status": "not judged", **NOT_JUDGED}
                )
                label = labels.get(step, NO_LABEL) if kind == "x0" else NO_LABEL
                yield (
                    folder / "denoise" / file,
                    f"{name}/denoise/{file}",
                    {**common, "step": step, "estimate": kind, **judge, **label},
                )
