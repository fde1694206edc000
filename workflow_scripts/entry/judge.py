"""Shell entry of rule `judge`: the VLM judge on every video of one (model, task)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the workflow's packages

from workflow_scripts.judge.jobs import judge_job  # noqa: E402

judge_job(sys.argv[1:])
