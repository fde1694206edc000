"""Snakemake entry of rule `judge`: the VLM judge on every video of one (model, task)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parents[1]))  # the workflow's packages

from workflow_scripts.judge.jobs import judge_job  # noqa: E402

judge_job(snakemake)
