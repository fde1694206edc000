"""Snakemake entry of rule `publish`."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parents[1]))  # the workflow's packages

from workflow_scripts.publish.job import publish_job  # noqa: E402

publish_job(snakemake)
