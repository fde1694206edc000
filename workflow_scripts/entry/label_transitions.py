"""Snakemake entry of rule `label_transitions`: the VLM labels of one video's checkpoint pairs."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parents[1]))  # the workflow's packages

from workflow_scripts.transitions import label_transitions_job  # noqa: E402

label_transitions_job(snakemake)
