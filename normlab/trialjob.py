"""One trial's ``normlab-train`` process, run by a search (normlab-tune): a JobProcess (its own
process group, the driver's stop signals passed on, a run still held by another process waited
for), one at a time.

A stop signal to the search is passed on to the job, and the search waits for the job's
checkpoint instead of killing it (``subprocess.run`` SIGKILLs its child on KeyboardInterrupt).
"""

from __future__ import annotations

import signal
import sys
import time
from pathlib import Path

from . import exitcodes
from .jobproc import AS_SENT, JobProcess, StopForwarding, train_command
from .run.stopsignals import status_of


def _announce(signum: int) -> None:
    print(
        f"\n[normlab-tune] {signal.Signals(signum).name}: the running trial writes a checkpoint, then "
        "the search stops",
        file=sys.stderr,
        flush=True,
    )


class TrialJob(StopForwarding):
    """The search's trials, one job at a time; ``signum``: the stop signal the search received."""

    def __init__(self):
        super().__init__(AS_SENT, _announce)

    def run(self, job: list[str], run_dir: Path) -> int:
        proc = JobProcess(train_command(job), run_dir)
        while True:
            waited = False
            while (holder := proc.holder()) is not None and self.signum is None:
                if not waited:
                    print(
                        f"[normlab-tune] {run_dir} is held by {holder} (a stopped search's job finishing its "
                        "checkpoint, or another process): waiting for it",
                        flush=True,
                    )
                    waited = True
                time.sleep(0.5)
            if self.signum is not None:
                return exitcodes.STOPPED[status_of(self.signum)]
            self.jobs = [proc.start()]
            if self.signum is not None:  # a stop that came while it started
                proc.send(self.forward[self.signum])
            rc = proc.wait()
            self.jobs = ()
            if rc != exitcodes.LOCKED or self.signum is not None:
                return rc
