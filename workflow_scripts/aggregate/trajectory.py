"""Scores along the denoising trajectory (`judge.checkpoints`): `trajectory_scores.csv`
averages completeness, rubric and final per model and step, the final video last (step
`final`), every step of a model over the same instances, and ends with the judge and its
versions (`judge.drift`)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import pandas as pd

from workflow_scripts.common import layout
from workflow_scripts.common.files import read_json, write_text
from workflow_scripts.common.logs import job_log
from workflow_scripts.judge.drift import with_judge

VALUES = ("completeness", "rubric", "final")
VERSION = "judge_model_version"


def trajectory_rows(folders: Iterable[str | Path]) -> pd.DataFrame:
    """From the checkpoint_scores.json of rule `judge_checkpoints`' `folders` and each
    instance's score.json: model, instance, step (the video's: `final`), status, VALUES and
    the judge's model version."""
    rows = []
    for model, task, instance, path in layout.documents(folders, "checkpoint_scores.json"):
        steps = read_json(path, layout.stage_fix(path), ["steps"])["steps"]
        outdir = path.parents[4]  # <outdir>/<model>/<task>/judge_checkpoints/<instance>/
        score = layout.score_file(outdir, model, task, instance)
        final = read_json(score, layout.stage_fix(score), ["status"])
        for score in [*steps, {**final, "step": "final"}]:
            values = {key: score.get(key) for key in ("step", "status", *VALUES)}
            version = {VERSION: score.get("model_version")}
            rows.append({"model": model, "instance": instance, **values, **version})
    return pd.DataFrame(rows, columns=["model", "instance", "step", "status", *VALUES, VERSION])


def trajectory_table(rows: pd.DataFrame, seed: int = 0, resamples: int = 1000) -> pd.DataFrame:
    """Per model and step (in step order, `final` last): each value's mean with its
    bootstrap 95% CI and `n`, over the instances `ok` at every step of that model."""
    from workflow_scripts.aggregate.tables import bootstrap

    ok = rows.groupby(["model", "instance"])["status"].transform(lambda s: (s == "ok").all())
    kept = rows[ok]
    order = sorted(set(kept["step"]), key=lambda step: (step == "final", str(step).zfill(9)))
    columns = ["model", "step", *(f"{v}{s}" for v in VALUES for s in ("", "_ci_low", "_ci_high"))]
    table = []
    for model in dict.fromkeys(rows["model"]):
        for step in order:
            cell = kept[(kept["model"] == model) & (kept["step"] == step)]
            row = {"model": model, "step": step, "n": len(cell)}
            stats = zip(VALUES, *bootstrap(cell[list(VALUES)], seed, resamples), strict=True)
            for value, mean, low, high in stats:
                row |= {value: mean, f"{value}_ci_low": low, f"{value}_ci_high": high}
            table.append(row)
    return pd.DataFrame(table, columns=[*columns, "n"])


def trajectory_scores_job(smk) -> None:
    """Rule `trajectory_scores`: the table (its judge: `params.judge_model`) and its plot."""
    from workflow_scripts.aggregate.plots import trajectory_lines

    with job_log(smk):
        rows = trajectory_rows(smk.input.checkpoints)
        table = with_judge(trajectory_table(rows), smk.params.judge_model, rows[VERSION])
        write_text(smk.output.table, table.to_csv(index=False))
        trajectory_lines(table, smk.output.plot)
        print(table.to_string(index=False))
