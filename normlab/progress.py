"""Progress: tqdm bars for a job's long loops (evaluation, decoding, BPE learning), on when the
job's ``progress=true`` (the runner sets it once, so tasks need no flag passed down); and the
progress of a sweep that runs in another process: runs done / total with an ETA, read from the
run directories (a run is done when its summary.json is final), printed as one line per change so
that it reads well in a log file and between the jobs' own output."""
from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Callable, Optional


_BARS = {"on": False}


def enable_bars(on: bool) -> None:
    _BARS["on"] = bool(on)


def bars_enabled() -> bool:
    return _BARS["on"]


def bar(iterable, desc: str, **kwargs):
    """``iterable`` wrapped in a tqdm bar that disappears when done (the training bar stays), or
    returned as is when bars are off, so a sweep's logs hold no bar at all."""
    if not _BARS["on"]:
        return iterable
    from tqdm import tqdm
    return tqdm(iterable, desc=desc, leave=False, dynamic_ncols=True, **kwargs)


def _duration(s: float) -> str:
    return f"{s / 3600:.1f} h" if s >= 5400 else f"{s / 60:.0f} min" if s >= 90 else f"{s:.0f} s"


class RunProgress:
    """``done_before`` runs were finished when the sweep started; the ETA extrapolates the rate
    of this session only, since resumed or skipped runs say nothing about the time a run takes."""

    def __init__(self, paths: list[Path], is_done: Callable[[Path], bool], clock=time.monotonic):
        self.paths, self.is_done, self.clock = list(paths), is_done, clock
        self.start = clock()
        self.done_before = self.count()
        self.last: Optional[int] = None

    def count(self) -> int:
        return sum(1 for p in self.paths if self.is_done(p))

    def line(self, done: int) -> str:
        total, new = len(self.paths), done - self.done_before
        elapsed = self.clock() - self.start
        if done >= total:
            eta = "all done"
        elif new <= 0:
            eta = "ETA after the first run"
        else:
            eta = f"ETA {_duration(elapsed / new * (total - done))}"
        return f"[reproduce] {done}/{total} runs done ({new} in this sweep, {_duration(elapsed)}), {eta}"

    def poll(self) -> Optional[str]:
        """The progress line when the count changed since the last poll, else None."""
        done = self.count()
        if done == self.last:
            return None
        self.last = done
        return self.line(done)


def watch(proc: subprocess.Popen, progress: RunProgress, every: float = 10.0, out=None,
          on_change: Optional[Callable[[], None]] = None) -> int:
    """Wait for ``proc``, printing ``progress`` (and calling ``on_change``) whenever a run
    finishes; returns its exit status."""
    out = out or sys.stdout  # looked up per call: a redirected sys.stdout must be honoured

    def poll():
        line = progress.poll()
        if line:
            print(line, file=out, flush=True)
            if on_change:
                on_change()
    while True:
        poll()
        try:
            rc = proc.wait(timeout=every)
        except subprocess.TimeoutExpired:
            continue
        poll()
        return rc
