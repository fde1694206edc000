"""Snakemake entry of rule `judge_reliability`: every judge against the human preference pairs."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parents[1]))  # the workflow's packages

from workflow_scripts.aggregate.reliability import judge_reliability_job  # noqa: E402

judge_reliability_job(snakemake)
