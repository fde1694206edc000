"""Snakemake entry of rule `contact_sheet`: one model's contact sheets and thumbnails."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parents[1]))  # the workflow's packages

from workflow_scripts.gallery.sheets import contact_sheet_job  # noqa: E402

contact_sheet_job(snakemake)
