"""One ``normlab-train`` process started by a driver (a search's trial, a study's slice), and the
stop signals the driver passes on to its jobs.

A job runs in a process group of its own, so a Ctrl-C in the driver's terminal reaches the driver
alone and the driver decides what the job is told; the kernel sends the job SIGTERM when the
driver dies, even by SIGKILL (stopsignals.job_process_setup), so it checkpoints and stops instead
of living on as an orphan that holds its run directory. A stop signal to the driver is passed on
to every running job, which writes a checkpoint and exits with a stopped code (exitcodes.STOPPED):
the next start resumes it. A run directory another process still holds (the job of a stopped
driver finishing its checkpoint) is not started over: ``holder()`` names the process to wait for.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Callable, Iterable, Optional

from . import exitcodes
from .run.runlock import lock_holder
from .run.stopsignals import job_process_setup

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
# A Ctrl-C is passed on as one (the job records "interrupted"), a hang-up as a preemption.
AS_SENT = {
    signal.SIGINT: signal.SIGINT,
    signal.SIGTERM: signal.SIGTERM,
    signal.SIGHUP: signal.SIGTERM,
}
# Every stop as a preemption: a study's slice stops its jobs to resume them in the next one.
AS_PREEMPTION = dict.fromkeys(STOP_SIGNALS, signal.SIGTERM)
# The exits after which the run has a checkpoint to resume from (a job killed by the SIGTERM
# before it installed its handlers included).
STOPPED_EXITS = (*exitcodes.STOPPED.values(), -signal.SIGTERM)


class JobStartError(RuntimeError):
    """A job's process could not be started (its interpreter or working directory is missing or
    unusable): one line that names what was run, where, and the system's reason."""


def train_command(overrides: list[str]) -> list[str]:
    """The command line of one job: this interpreter's normlab.train with ``overrides``."""
    return [sys.executable, "-m", "normlab.train", *overrides]


def status_of_exit(rc: int) -> str:
    """What a job's exit code says of its run: ``finished`` (it has a final summary, or none is
    due), ``stopped`` (a checkpoint to resume), ``locked`` (another process holds the run: start it
    again once that is gone), or ``failed``."""
    if rc == exitcodes.OK:
        return "finished"
    if rc in STOPPED_EXITS:
        return "stopped"
    if rc == exitcodes.LOCKED:
        return "locked"
    return "failed"


class JobProcess:
    """One job: ``argv`` (train_command's, or a pinned checkout's), its run directory, and where it
    runs and writes (``cwd``, ``env``; ``log``: stdout and stderr appended to that file, else the
    driver's own)."""

    def __init__(
        self,
        argv: list[str],
        run_dir: Path,
        cwd: Optional[Path] = None,
        env: Optional[dict] = None,
        log: Optional[Path] = None,
    ):
        self.argv, self.run_dir, self.cwd, self.env, self.log = argv, Path(run_dir), cwd, env, log
        self.proc: Optional[subprocess.Popen] = None

    def holder(self) -> Optional[str]:
        """The process that holds the run directory's lock, or None when the job may start."""
        return lock_holder(self.run_dir)

    def start(self) -> JobProcess:
        if self.log is not None:
            self.log.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log, "ab") if self.log is not None else contextlib.nullcontext() as f:
            try:
                self.proc = subprocess.Popen(
                    self.argv,
                    cwd=self.cwd,
                    env=self.env,
                    stdout=f,
                    stderr=subprocess.STDOUT if f else None,
                    stdin=subprocess.DEVNULL if f else None,
                    preexec_fn=job_process_setup,
                )
            except (OSError, subprocess.SubprocessError) as e:
                # a broken environment (a venv replaced mid-study, a checkout removed): the driver
                # records the job as failed and goes on, and the job's log says why
                reason = getattr(e, "strerror", None) or str(e)
                if getattr(e, "filename", None):  # the interpreter or the working directory
                    reason += f": {e.filename}"
                line = f"could not start {self.argv[0]} (in {self.cwd or Path.cwd()}): {reason}"
                if f:
                    f.write(f"normlab: {line}\n".encode())
                raise JobStartError(line) from e
        return self

    def poll(self) -> Optional[int]:
        return None if self.proc is None else self.proc.poll()

    def wait(self) -> int:
        return self.proc.wait()

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def send(self, signum: int) -> None:
        """``signum`` to the job's whole process group (its data-loader workers too)."""
        if self.running:
            try:
                os.killpg(self.proc.pid, signum)
            except (ProcessLookupError, PermissionError):
                pass


class StopForwarding:
    """While active, a stop signal to the driver is recorded (the first one, in ``signum``),
    announced once (``announce(signum)``) and passed on to every job in ``jobs`` (any iterable of
    JobProcess: a driver may hand over its own collection of running jobs) as ``forward`` maps
    it; the driver's loop reads ``signum`` to start nothing more."""

    def __init__(self, forward: dict = AS_SENT, announce: Optional[Callable[[int], None]] = None):
        self.forward, self.announce = forward, announce
        self.signum: Optional[int] = None
        self.jobs: Iterable[JobProcess] = ()

    def _on_signal(self, signum, _frame) -> None:
        if self.signum is None:
            self.signum = signum
            if self.announce:
                self.announce(signum)
        for job in self.jobs:
            job.send(self.forward[signum])

    def __enter__(self) -> StopForwarding:
        self._old = {s: signal.signal(s, self._on_signal) for s in STOP_SIGNALS}
        return self

    def __exit__(self, *exc) -> None:
        for s, h in self._old.items():
            signal.signal(s, h)
