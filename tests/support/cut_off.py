"""A fault injector: the generate job's real entry, run with a signal sent to itself at a
chosen step, as SLURM or a crash would cut it off, but at a step the test decides.

    python -m tests.support.cut_off STAGE STEP SIGNAL DELAY -- <generate entry options>

After the job has finished step STEP of its stage STAGE (1-based; LTX-2.3's second stage is
2) and taken that step's snapshot, SIGNAL (KILL, TERM, URG) goes to the process: at once when
DELAY is 0 (nothing more runs under SIGKILL), else DELAY seconds later from a thread, which
lands inside a following step. Nothing else of the job is changed.
"""

from __future__ import annotations

import os
import runpy
import signal
import sys
import threading

from tests.support.workflow import REPO
from vgi_models.resume import Trajectory

ENTRY = REPO / "workflow_scripts" / "entry" / "generate.py"


def main(argv: list[str]) -> None:
    stage, step, name, delay, separator, *entry_args = argv
    assert separator == "--", argv
    target, signum, delay = (int(stage) - 1, int(step)), signal.Signals[f"SIG{name}"], float(delay)
    stepped = Trajectory._stepped

    def stepped_then_signalled(self, pipe, i, t, tensors):
        reply = stepped(self, pipe, i, t, tensors)
        if (self.stage, self.step) == target:
            if delay:
                threading.Timer(delay, os.kill, (os.getpid(), signum)).start()
            else:
                os.kill(os.getpid(), signum)
        return reply

    Trajectory._stepped = stepped_then_signalled
    sys.argv = [str(ENTRY), *entry_args]
    runpy.run_path(str(ENTRY), run_name="__main__")


if __name__ == "__main__":
    main(sys.argv[1:])
