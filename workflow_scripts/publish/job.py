"""Rule `publish`: the study as a dataset in the Hugging Face layout (`dataset`, `cards`)."""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from pathlib import Path

import pandas as pd

from workflow_scripts.common import layout
from workflow_scripts.common.files import read_csv, read_json, write_text
from workflow_scripts.common.layout import GENERATION_FIX, TABLE_FIX
from workflow_scripts.common.logs import job_log
from workflow_scripts.publish.cards import dataset_card, leaderboard, model_card
from workflow_scripts.publish.dataset import link_or_copy, run_rows
from workflow_scripts.publish.metadata import METADATA, write_metadata


def how_made(outdir: Path, runs: dict, model: str, instances: dict) -> tuple[str, dict]:
    """The hardware a model's main-run videos were made on and its mean seconds per video
    by phase (as each generation.json recorded them)."""
    devices, seconds = set(), defaultdict(list)
    for instance in runs[model]["instances"]:
        folder = layout.run_folder(outdir, model, instances[instance]["task"], instance)
        meta = read_json(folder / "generation.json", GENERATION_FIX, optional=True) or {}
        if "device" in meta:
            devices.add(f"{meta['device']} ({meta.get('threads', '?')} CPU threads)")
        for phase, value in (meta.get("seconds") or {}).items():
            seconds[phase].append(value)
    means = {phase: sum(values) / len(values) for phase, values in seconds.items()}
    if means:
        means["total"] = sum(means.values())
    return ", ".join(sorted(devices)), means


def publish(smk) -> dict:
    """Write the folder (`smk.output[0]`); the counts of videos and checkpoint videos."""
    folder = Path(smk.output[0])
    outdir = folder.parent  # <outdir>/publish
    runs, models, instances = smk.params.runs, smk.params.models, smk.params.instances
    by_model, left_out = defaultdict(list), []
    for run, info in runs.items():
        for source, name, row in run_rows(outdir, run, info, instances[info["condition"]]):
            video = source if row["step"] is None else source.parent  # beside generation.json
            if layout.failed_generation(video) is not None:
                left_out.append(name)  # a video API's refusal: no video to publish
                continue
            link_or_copy(source, folder / info["model"] / name)
            by_model[info["model"]].append({"file_name": name, **row})
    if hasattr(smk.input, "finals"):
        finals = read_csv(smk.input.finals, TABLE_FIX, ["model", "domain", "level", "final"])
        strict = read_csv(smk.input.strict, TABLE_FIX, ["model", "domain", "level"])
        board = leaderboard(finals, strict, list(models))
    else:  # the judge off: no scores, no leaderboard
        finals = pd.DataFrame(columns=["model", "domain", "level", "final"])
        board = pd.DataFrame(columns=["rank", "model"])
    about, counts = {}, {"videos": 0, "checkpoints": 0}
    for model, info in models.items():
        rows = by_model.get(model, [])
        videos = sum(row["step"] is None for row in rows)
        counts["videos"] += videos
        counts["checkpoints"] += len(rows) - videos
        hardware, seconds = how_made(outdir, runs, model, instances[layout.DEFAULT_CONDITION])
        about[model] = {
            **info,
            "videos": videos,
            "checkpoints": len(rows) - videos,
            "hardware": hardware,
            "seconds": seconds,
        }
        write_metadata(folder / model / METADATA, rows)
        write_text(folder / model / "README.md", model_card(model, about[model], board, finals))
    judge = json.loads(smk.params.judge)
    versions = {row["judge_model_version"] for rows in by_model.values() for row in rows}
    meta = {
        **smk.params.card,
        "judge": judge,
        "judge_versions": sorted(v for v in versions if v),
        "prompts_digest": hashlib.sha256(
            json.dumps(judge["prompts"], sort_keys=True).encode()
        ).hexdigest()[:16],
        "citation": Path(smk.input.citation).read_text(encoding="utf-8"),
    }
    write_text(folder / "README.md", dataset_card(meta, about, counts, board))
    return {**counts, "left_out": left_out}


def publish_job(smk) -> None:
    """Rule `publish`: see the module."""
    with job_log(smk):
        counts = publish(smk)
        for name in counts["left_out"]:
            print(f"left out (its generation failed, no video): {name}")
        print(json.dumps({k: v for k, v in counts.items() if k != "left_out"}))
