"""`python -m workflow_scripts.annotate`: the transition labelling page (`server`);
`python -m workflow_scripts.annotate preferences ...`: the preference page."""

import sys

if sys.argv[1:2] == ["preferences"]:
    from workflow_scripts.annotate.preferences import main

    main(sys.argv[2:])
else:
    from workflow_scripts.annotate.server import main

    main()
