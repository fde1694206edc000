"""Snakemake entry of rule `label_transitions`: checkpoint pair labels of one (model, task)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parents[1]))  # the workflow's packages

from workflow_scripts.transitions.labelling import label_transitions_job  # noqa: E402

label_transitions_job(snakemake)
