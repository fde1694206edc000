"""Shell entry of an image model's job: one image model on one instance."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the workflow's packages

from workflow_scripts.generate_image import generate_image_job  # noqa: E402

generate_image_job(sys.argv[1:])
