"""Shell entry of rule `generate`: one model on one instance."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the workflow's packages

from workflow_scripts.generate import generate_job  # noqa: E402

generate_job(sys.argv[1:])
