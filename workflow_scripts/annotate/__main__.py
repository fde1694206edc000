"""`python -m workflow_scripts.annotate`: the annotation page (`server`)."""

from workflow_scripts.annotate.server import main

main()
