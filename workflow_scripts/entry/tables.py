"""Snakemake entry of rule `tables`: the run's results into the paper's tables."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parents[1]))  # the workflow's packages

from workflow_scripts.aggregate.jobs import tables_job  # noqa: E402

tables_job(snakemake)
