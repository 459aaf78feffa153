"""One process per run directory: an advisory lock on ``.<run dir name>.lock`` beside it.

Two sweeps that share a grid (two shells, two nodes on a shared file system, a SLURM job
re-submitted while the old one still runs) would otherwise train the same run twice and
interleave their checkpoints. The second process stops with RunLocked, naming the holder, before
it reads or writes anything in the run directory; re-running the command after the first one
ends skips (finished) or resumes (interrupted) the run. ``flock`` locks die with their process, so
a killed job never leaves a stale lock behind. The lock file sits beside the run directory, not in
it, so a job refused for bad input has created no run directory.
"""

from __future__ import annotations

import fcntl
import os
import socket
import time
from pathlib import Path
from typing import Optional


class RunLocked(RuntimeError):
    """Another live process is training this run directory."""


class RunLock:
    def __init__(self, run_dir: Path, enabled: bool = True, what: str = "trained"):
        run_dir = Path(run_dir)
        self.run_dir = run_dir
        self.path = run_dir.parent / f".{run_dir.name}.lock"
        self.enabled, self.what = enabled, what
        self.fd = None

    def __enter__(self) -> RunLock:
        if not self.enabled:
            return self
        self.path.parent.mkdir(parents=True, exist_ok=True)
        while True:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = os.read(fd, 256).decode(errors="replace").strip() or "unknown process"
                os.close(fd)
                raise RunLocked(
                    f"{self.run_dir} is being {self.what} by another process ({holder}); wait for "
                    "it to end (running the command again then skips or resumes this run), or "
                    "stop that process"
                ) from None
            # The holder we waited on may have removed the file after we opened it: lock the file
            # that is at the path now, or two processes could each hold a lock on a different file.
            try:
                same = os.path.samestat(os.fstat(fd), os.stat(self.path))
            except FileNotFoundError:
                same = False
            if same:
                break
            os.close(fd)
        self.fd = fd
        try:  # who holds it, for the message of a second process; the lock holds without it
            os.ftruncate(fd, 0)
            os.write(
                fd,
                f"pid {os.getpid()} on {socket.gethostname()} since {time.strftime('%Y-%m-%d %H:%M:%S')}".encode(),
            )
        except OSError:  # a full disk: the run then stops on its own first write, lock removed
            pass
        return self

    def __exit__(self, *exc) -> None:
        if self.fd is not None:
            self.path.unlink(missing_ok=True)  # while still locked: see the samestat check above
            os.close(self.fd)
            self.fd = None


def lock_holder(run_dir: Path) -> Optional[str]:
    """Who holds ``run_dir``'s run lock, None when it is free."""
    path = Path(run_dir).parent / f".{Path(run_dir).name}.lock"
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    except BlockingIOError:
        return os.read(fd, 256).decode(errors="replace").strip() or "another process"
    finally:
        os.close(fd)
