"""Snakemake entry of rule `label_agreement`: agreement of human and VLM transition labels."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parents[1]))  # the workflow's packages

from workflow_scripts.aggregate.agreement import label_agreement_job  # noqa: E402

label_agreement_job(snakemake)
