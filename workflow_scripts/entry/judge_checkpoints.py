"""Shell entry of rule `judge_checkpoints`: the VLM judge on chosen checkpoint videos
(forked, `forkserver`)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the workflow's packages

from workflow_scripts.forkserver import run  # noqa: E402

run("workflow_scripts.trajectory:judge_checkpoints_job", sys.argv[1:])
