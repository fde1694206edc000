"""Snakemake entry of rule `export_official`: videos in the official judge's layout."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parents[1]))  # the workflow's packages

from workflow_scripts.gallery.export import export_official_job  # noqa: E402

export_official_job(snakemake)
