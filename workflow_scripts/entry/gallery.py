"""Snakemake entry of rule `gallery`: the static HTML gallery."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parents[1]))  # the workflow's packages

from workflow_scripts.gallery.pages import gallery_job  # noqa: E402

gallery_job(snakemake)
