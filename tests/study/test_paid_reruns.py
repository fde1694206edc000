"""status_errors.csv's rerun command of a paid request: an image API model's refusal is
asked again through its image and `image_api`'s resubmit, and a job that failed on a request
that may have been taken gets the user's word its message named, in both branches."""

from __future__ import annotations

import pandas as pd

from workflow_scripts.common.files import write_json
from workflow_scripts.paid.ledger import COLUMNS
from workflow_scripts.study.documents import Documents, Study
from workflow_scripts.study.status import progress, task_instances
from workflow_scripts.study.tally import tally

INSTANCES = {f"sorting_lv1_00{n}": "sorting" for n in range(1, 3)}
RERUN = "--cores 2 --configfile config.yaml"


def errors(tmp_path, jobs: list[dict]) -> pd.DataFrame:
    run = {"model": "img", "kind": "api", "output": "image", "instances": INSTANCES,
           "main": True, "frames": 1, "fps": 1.0, "runtime_min": 30,
           "entry": {"provider": "openai_image", "model_id": "gpt-image-2"}}  # fmt: skip
    study = Study.from_dict({"outdir": str(tmp_path), "runs": {"img": run},
                             "judges": {"main": {"model": "x", "protocol": {}}}})  # fmt: skip
    refused = study.generation(study.runs["img"], "sorting_lv1_001")
    write_json(refused, {"status": "error", "reason": "refused: moderation_blocked"})
    counts = {key: tally(study, study.runs["img"], names, Documents())
              for key, names in task_instances(study).items()}  # fmt: skip
    _, _, table = progress(study, counts, jobs, RERUN, {}, pd.DataFrame(columns=COLUMNS))
    return table.set_index("instance")


def test_an_image_refusal_and_an_unsure_request_rerun_with_image_apis_resubmit(tmp_path):
    target = str(tmp_path / "img" / "sorting" / "sorting_lv1_002" / "image.png")
    command = f"snakemake {target} --config 'image_api={{resubmit: true}}'"
    reason = f"Image API failure: sorting_lv1_002 (img): it may have been taken ... run: {command}"
    where = {"model": "img", "task": "sorting", "instance": "sorting_lv1_002"}
    failed = {"rule": "generate_image_api", "state": "failed", "reason": reason,
              "target": target, "started": 0.0, "wildcards": where}  # fmt: skip
    table = errors(tmp_path, [failed])
    image = tmp_path / "img" / "sorting" / "sorting_lv1_001" / "image.png"
    assert table.loc["sorting_lv1_001", "rerun"] == (
        f"snakemake {image} --force {RERUN} --config 'image_api={{resubmit: true}}'"
    )
    assert table.loc["sorting_lv1_002", "rerun"] == (
        f"snakemake {target} {RERUN} --config 'image_api={{resubmit: true}}'"
    )
    # a job that failed otherwise (a refused key) reruns without the user's word
    failed["reason"] = "Image API failure: sorting_lv1_002 (img): HTTP 401: bad key"
    assert errors(tmp_path, [failed]).loc["sorting_lv1_002", "rerun"] == (
        f"snakemake {target} {RERUN}"
    )
