"""The status page names the judge and the versions its documents report, and warns when
they drift: two versions among the main judge's documents (a variant's are its own), or
a judge other than the paper's. Nothing is said for the paper's judge at one version."""

from __future__ import annotations

import pandas as pd

from workflow_scripts.common.files import write_json
from workflow_scripts.study.documents import Documents, Study
from workflow_scripts.study.status import main_judge, progress, task_instances
from workflow_scripts.study.status_page import page
from workflow_scripts.study.tally import tally
from workflow_scripts.video_api.ledger import COLUMNS

INSTANCES = {f"sorting_lv1_00{n}": "sorting" for n in range(1, 4)}


def status_page(tmp_path, model: str, versions: list[str], variant: str) -> str:
    """status.html of a study judged by `model`, whose instances' scores report `versions`
    (one each) and whose variant `second` reports `variant` for every instance."""
    run = {"kind": "pipeline", "instances": INSTANCES, "main": True, "model": "ext",
           "frames": 9, "fps": 8.0}  # fmt: skip
    judges = {"main": {"model": model, "protocol": {}}, "second": {"model": "b", "protocol": {}}}
    study = Study.from_dict({"outdir": str(tmp_path), "runs": {"ext": run}, "judges": judges})
    for instance, version in zip(INSTANCES, versions, strict=True):
        for stage, reported in (("main", version), ("second", variant)):
            score = {"status": "ok", "calls": 4, "model_version": reported}
            write_json(study.document(stage, study.runs["ext"], instance), score)
    counts = {
        key: tally(study, study.runs[key[0]], names, Documents())
        for key, names in task_instances(study).items()
    }
    ledger = pd.DataFrame(columns=COLUMNS)
    table, models, errors = progress(study, counts, [], "--cores 1", {}, ledger)
    return page(table, models, errors, "now", "", None, "ended", main_judge(study, counts))


def test_the_status_page_warns_when_the_judge_drifts(tmp_path):
    mixed = status_page(tmp_path / "a", "gemini-3-flash-preview", ["v1", "v1", "v2"], "v9")
    assert (
        '<p id="judge">Judge: gemini-3-flash-preview; model versions its replies reported '
        "(documents): v1 (2), v2 (1).</p>"
    ) in mixed
    assert (
        '<p id="judge-drift">Judge drift: judge model versions mixed: v1 (2 documents), v2 '
        "(1 documents) (the tables say so in their judge_note column).</p>"
    ) in mixed
    other = status_page(tmp_path / "b", "gpt-5-mini", ["v1"] * 3, "v9")
    assert "judge gpt-5-mini is not the paper&#x27;s (gemini-3-flash-preview)" in other
    paper = status_page(tmp_path / "c", "gemini-3-flash-preview", ["v1"] * 3, "v9")
    assert "(documents): v1 (3).</p>" in paper and 'id="judge-drift"' not in paper
