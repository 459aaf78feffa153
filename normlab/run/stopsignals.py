"""Stop signals during training: SIGTERM and SIGUSR1 (a scheduler preempting the job), SIGHUP (the
terminal went away) and SIGINT (Ctrl-C) end the run at the next step boundary with a checkpoint,
instead of killing it mid-step.

The first signal is recorded and acted on by the training loop; later ones only say that the
checkpoint is still being written, so a second Ctrl-C cannot tear the save. The handlers stay
until the run's summary is written (the runner holds them across fit and the summary), then the
previous ones come back.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import threading
from typing import Optional

# SIGHUP: the terminal went away (an ssh session dropped); the drivers pass it on as SIGTERM
SIGNALS = (signal.SIGTERM, signal.SIGUSR1, signal.SIGINT, signal.SIGHUP)
PR_SET_PDEATHSIG = 1


def job_process_setup() -> None:
    """``preexec_fn`` of a job a driver starts (a study slice, a search's trial): its own process
    group, so a terminal's Ctrl-C reaches the driver alone and it decides what the job is told; and
    SIGTERM when the driver dies, even by SIGKILL, so the job checkpoints and stops instead of
    living on as an orphan that holds its run directory."""
    os.setpgid(0, 0)
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)
    except (OSError, AttributeError):  # not Linux: a SIGKILLed driver may leave its jobs running
        pass


def status_of(signum: Optional[int]) -> str:
    """``interrupted`` for Ctrl-C, ``preempted`` for a scheduler's signal (or one on another rank)."""
    return "interrupted" if signum == signal.SIGINT else "preempted"


class StopSignals:
    def __init__(self, announce: bool = True):
        self.signum: Optional[int] = None
        self.announce = announce
        self._depth = 0
        self._old: dict = {}

    def __enter__(self) -> StopSignals:
        if self._depth == 0 and threading.current_thread() is threading.main_thread():
            self._old = {s: signal.signal(s, self.handle) for s in SIGNALS}
        self._depth += 1
        return self

    def __exit__(self, *exc) -> None:
        self._depth -= 1
        if self._depth == 0:
            for s, h in self._old.items():
                signal.signal(s, h)
            self._old = {}

    def handle(self, signum, frame=None) -> None:
        name = signal.Signals(signum).name
        first = self.signum is None
        if first:
            self.signum = signum
        if not self.announce:
            return
        try:  # after SIGHUP the terminal may be gone: saying so must not stop the stop
            print(
                f"\n[normlab] {name}: stopping after the current step and writing a checkpoint"
                if first
                else f"[normlab] {name} again: still writing the checkpoint; it is not cut short "
                "(SIGKILL would lose the steps since the last one)",
                file=sys.stderr,
                flush=True,
            )
        except (OSError, ValueError):
            pass
