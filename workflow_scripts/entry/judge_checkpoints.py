"""Snakemake entry of rule `judge_checkpoints`: the judge on chosen checkpoints, per task."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parents[1]))  # the workflow's packages

from workflow_scripts.judge.checkpoints import judge_checkpoints_job  # noqa: E402

judge_checkpoints_job(snakemake)
