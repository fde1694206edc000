"""Snakemake entry of rule `select_instances`: the audited list of selected instances."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parents[1]))  # the workflow's packages

from workflow_scripts.benchmark.study import select_instances_job  # noqa: E402

select_instances_job(snakemake)
