"""Shell entry of rule `judge_checkpoints`: the judge on chosen checkpoints of a (model, task)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the workflow's packages

from workflow_scripts.judge.checkpoints import judge_checkpoints_job  # noqa: E402

judge_checkpoints_job(sys.argv[1:])
