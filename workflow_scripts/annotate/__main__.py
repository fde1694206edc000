"""`python -m workflow_scripts.annotate [COMMAND] [OPTIONS]`: the annotation pages."""

import sys

from workflow_scripts.annotate.items import PROG

COMMANDS = {
    "transitions": "label checkpoint pairs by hand (the command when none is named)",
    "preferences": "rank three models' videos of one instance (triplets)",
}
HELP = f"""usage: {PROG} [COMMAND] [OPTIONS]

The annotation pages, served on 127.0.0.1 (COMMAND --help: its options).

commands:
""" + "".join(f"  {name:<13} {what}\n" for name, what in COMMANDS.items())

argv = sys.argv[1:]
if argv[:1] in (["-h"], ["--help"]):
    print(HELP, end="")
elif argv[:1] == ["preferences"]:
    from workflow_scripts.annotate.preferences import main

    main(argv[1:])
else:
    from workflow_scripts.annotate.server import main

    main(argv[1:] if argv[:1] == ["transitions"] else argv)
