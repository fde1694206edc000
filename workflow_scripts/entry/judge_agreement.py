"""Snakemake entry of rule `judge_agreement`: every pair of judges on the same videos."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parents[1]))  # the workflow's packages

from workflow_scripts.aggregate.reliability import judge_agreement_job  # noqa: E402

judge_agreement_job(snakemake)
