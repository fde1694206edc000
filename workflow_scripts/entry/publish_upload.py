"""Snakemake entry of rule `publish_upload`."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parents[1]))  # the workflow's packages

from workflow_scripts.publish.upload import upload_job  # noqa: E402

upload_job(snakemake)
