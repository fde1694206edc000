"""Snakemake entry of rule `plots`: the paper's figures from the tables."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parents[1]))  # the workflow's packages

from workflow_scripts.aggregate.plots import plots_job  # noqa: E402

plots_job(snakemake)
