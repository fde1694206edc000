"""Snakemake entry of rule `generate_image_api`: one image API model's image of one instance."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parents[1]))  # the workflow's packages

from workflow_scripts.image_api.job import generate_image_api_job  # noqa: E402

generate_image_api_job(snakemake)
