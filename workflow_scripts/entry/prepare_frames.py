"""Snakemake entry of rule `prepare_frames`: the frames the VLM jobs of one (model, task) send."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parents[1]))  # the workflow's packages

from workflow_scripts.judge.prepared import prepare_frames_job  # noqa: E402

prepare_frames_job(snakemake)
