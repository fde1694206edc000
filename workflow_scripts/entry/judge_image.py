"""Snakemake entry of rule `judge_image`: the VLM judge on every image of one (model, task)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parents[1]))  # the workflow's packages

from workflow_scripts.judge.image import judge_image_job  # noqa: E402

judge_image_job(snakemake)
