"""Snakemake entry of rule `export_label_sheet`: the checkpoint pairs still to label by hand."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parents[1]))  # the workflow's packages

from workflow_scripts.aggregate.agreement import export_label_sheet_job  # noqa: E402

export_label_sheet_job(snakemake)
