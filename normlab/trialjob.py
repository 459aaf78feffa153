"""One trial's ``normlab-train`` process, run by a search (normlab-tune).

A stop signal to the search is passed on to the job, and the search waits for the job's
checkpoint instead of killing it (``subprocess.run`` SIGKILLs its child on KeyboardInterrupt). The
job has its own process group and is sent SIGTERM if the search dies (stopsignals.job_process_setup).
A run directory still held by another process (a stopped search's job finishing its checkpoint) is
waited for, so the trial resumes that run instead of failing on its lock.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Optional

from . import exitcodes
from .run.runlock import lock_holder
from .run.stopsignals import job_process_setup, status_of


class TrialJob:
    """One trial's ``normlab-train`` process. A stop signal to the search is passed on to it, and
    the search waits for its checkpoint instead of killing it (subprocess.run would SIGKILL it)."""

    FORWARD = {
        signal.SIGINT: signal.SIGINT,
        signal.SIGTERM: signal.SIGTERM,
        signal.SIGHUP: signal.SIGTERM,
    }

    def __init__(self):
        self.proc: Optional[subprocess.Popen] = None
        self.signum: Optional[int] = None

    def _on_signal(self, signum, _frame) -> None:
        if self.signum is None:
            self.signum = signum
            print(
                f"\n[normlab-tune] {signal.Signals(signum).name}: the running trial writes a checkpoint, then "
                "the search stops",
                file=sys.stderr,
                flush=True,
            )
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(self.FORWARD[signum])

    def __enter__(self) -> TrialJob:
        self._old = {s: signal.signal(s, self._on_signal) for s in self.FORWARD}
        return self

    def __exit__(self, *exc) -> None:
        for s, h in self._old.items():
            signal.signal(s, h)

    def run(self, job: list[str], run_dir: Path) -> int:
        while True:
            waited = False
            while (holder := lock_holder(run_dir)) is not None and self.signum is None:
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
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "normlab.train", *job], preexec_fn=job_process_setup
            )
            rc = self.proc.wait()
            self.proc = None
            if rc != exitcodes.LOCKED or self.signum is not None:
                return rc
