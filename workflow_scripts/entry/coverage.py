"""Snakemake entry of rule `coverage`: how much of the selection each model made elsewhere holds."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parents[1]))  # the workflow's packages

from workflow_scripts.aggregate.coverage import coverage_job  # noqa: E402

coverage_job(snakemake)
