"""Snakemake entry of rule `image_tables`: the image judge's scores into Table 4."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parents[1]))  # the workflow's packages

from workflow_scripts.aggregate.images import image_tables_job  # noqa: E402

image_tables_job(snakemake)
