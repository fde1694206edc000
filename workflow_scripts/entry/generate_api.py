"""Snakemake entry of rule `generate_api`: one video API model's video of one instance."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parents[1]))  # the workflow's packages

from workflow_scripts.video_api.job import generate_api_job  # noqa: E402

generate_api_job(snakemake)
