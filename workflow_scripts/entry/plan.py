"""Snakemake entry of rule `plan`: what is left of the study, printed and in plan.csv."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parents[1]))  # the workflow's packages

from workflow_scripts.study.plan import plan_job  # noqa: E402

plan_job(snakemake)
