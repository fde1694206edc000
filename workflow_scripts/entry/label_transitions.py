"""Shell entry of rule `label_transitions`: the VLM labels of one video's checkpoint pairs
(forked, `forkserver`)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the workflow's packages

from workflow_scripts.forkserver import run  # noqa: E402

run("workflow_scripts.transitions:label_transitions_job", sys.argv[1:])
