"""Snakemake entry of rule `hold_image`: a static baseline's video of one instance."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parents[1]))  # the workflow's packages

from workflow_scripts.held_image import hold_image_job  # noqa: E402

hold_image_job(snakemake)
