"""Snakemake entry of rule `trajectory_scores`: scores along the denoising steps."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parents[1]))  # the workflow's packages

from workflow_scripts.aggregate.trajectory import trajectory_scores_job  # noqa: E402

trajectory_scores_job(snakemake)
