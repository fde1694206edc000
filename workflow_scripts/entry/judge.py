"""Snakemake entry of rule `judge`: the VLM judge on one generated video."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parents[1]))  # the workflow's packages

from workflow_scripts.jobs import judge_job  # noqa: E402

judge_job(snakemake)
