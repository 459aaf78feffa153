"""Jobs in worker processes (Hydra's joblib launcher, ``experiment=xu2019``'s default): a stop
signal to the sweep ends it with the documented code, and a sweep killed outright leaves no
worker training.

The sweep's process waits in joblib while its loky workers train. A SIGTERM, SIGINT or SIGHUP to
it is recorded and passed on to the workers (a signal to the whole process group reaches them
anyway; a ``kill <pid>`` of the sweep alone now does too); each running job writes its checkpoint
and stops, and the sweep exits 75 (130 for Ctrl-C) instead of dying with 143 and leaving its
workers to train on. A worker whose sweep died (SIGKILL, an OOM kill) is re-parented: a watchdog
thread in it sees its parent change, stops its job as a preemption (a checkpoint, status
"preempted") and ends the worker, instead of training on for the rest of the run while holding
its run directory's lock.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path
from typing import Optional

from .. import exitcodes

STOPS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
POLL_S = 1.0
_watch: dict = {}


def in_worker(launcher: str) -> bool:
    """Whether a job of this launcher (its ``_target_`` or its class's module) runs in a worker
    process rather than the sweep's own."""
    return "joblib" in launcher.lower()


def children(pid: int) -> list[int]:
    """The live child processes of ``pid`` (Linux /proc; [] elsewhere)."""
    found = []
    for d in Path("/proc").iterdir() if Path("/proc").is_dir() else []:
        if not d.name.isdigit():
            continue
        try:
            stat = (d / "stat").read_text()
        except OSError:
            continue
        # the command name (field 2) may hold spaces: the parent pid follows its closing ')'
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
            found.append(int(d.name))
    return found


def workers(pid: int) -> list[int]:
    """The loky worker processes among ``pid``'s children (not its resource trackers)."""
    out = []
    for child in children(pid):
        try:
            cmd = Path(f"/proc/{child}/cmdline").read_bytes().decode(errors="replace")
        except OSError:
            continue
        if "loky" in cmd and "resource_tracker" not in cmd:
            out.append(child)
    return out


class SweepStops:
    """In the sweep's process, around a joblib launch: a stop signal is recorded (``signum``) and
    passed on to the worker processes (a Ctrl-C as one, anything else as SIGTERM); the launch goes
    on until the workers return, then ``code()`` is the sweep's exit code (None: no stop came)."""

    def __init__(self):
        self.signum: Optional[int] = None
        self._old: dict = {}

    def _on_signal(self, signum, _frame) -> None:
        self.signum = self.signum or signum
        forward = signal.SIGINT if signum == signal.SIGINT else signal.SIGTERM
        for pid in workers(os.getpid()):
            try:
                os.kill(pid, forward)
            except (ProcessLookupError, PermissionError):
                pass

    def __enter__(self) -> SweepStops:
        if threading.current_thread() is threading.main_thread():
            self._old = {s: signal.signal(s, self._on_signal) for s in STOPS}
        return self

    def __exit__(self, *exc) -> None:
        for s, h in self._old.items():
            signal.signal(s, h)
        self._old = {}

    def code(self) -> Optional[int]:
        if self.signum is None:
            return None
        return exitcodes.INTERRUPTED if self.signum == signal.SIGINT else exitcodes.PREEMPTED


def watch_parent() -> None:
    """In a worker: once per process, a daemon thread that stops the worker when its parent (the
    sweep) is gone. The job running then gets SIGTERM (its checkpoint, status "preempted"); the
    worker exits 75 once no job runs (at once when idle)."""
    if _watch:
        return
    _watch.update(parent=os.getppid(), busy=False)

    def loop() -> None:
        while os.getppid() == _watch["parent"]:
            time.sleep(POLL_S)
        os.kill(os.getpid(), signal.SIGTERM)  # the job's StopSignals, or the default when idle
        while _watch["busy"]:
            time.sleep(POLL_S / 10)
        os._exit(exitcodes.PREEMPTED)

    threading.Thread(target=loop, name="normlab-parent-watch", daemon=True).start()


class Busy:
    """Marks a worker's job as running, so that an orphaned worker waits for its checkpoint."""

    def __enter__(self) -> Busy:
        if _watch:
            _watch["busy"] = True
        return self

    def __exit__(self, *exc) -> None:
        if _watch:
            _watch["busy"] = False
