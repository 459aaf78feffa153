"""Progress: tqdm bars for a job's long loops (evaluation, decoding, BPE learning), on when the
job's ``progress=true`` (the runner sets it once, so tasks need no flag passed down); and the
progress line of a study's slice (runs done / total with an ETA), printed once per finished run so
that it reads well in a log file.

Bars are for a terminal. When stderr is a file or a pipe (a log, a SLURM output file), the
training loop writes one line per tenth of its steps instead and the other loops write nothing:
a bar's redraws would fill a log with carriage-return frames (about 94 KB for 3,000 steps).
"""

from __future__ import annotations

import sys
import time

_BARS = {"on": False}


def enable_bars(on: bool) -> None:
    _BARS["on"] = bool(on)


def bars_enabled() -> bool:
    return _BARS["on"] and _terminal()


def bar(iterable, desc: str, **kwargs):
    """``iterable`` wrapped in a tqdm bar that disappears when done (the training bar stays), or
    returned as is when bars are off, so a sweep's logs hold no bar at all."""
    if not bars_enabled():
        return iterable
    from tqdm import tqdm

    return tqdm(iterable, desc=desc, leave=False, dynamic_ncols=True, **kwargs)


def _terminal() -> bool:
    return sys.stderr.isatty()


class Lines:
    """The training loop's progress in a log: a line at every tenth of the steps, with the loss."""

    def __init__(self, total: int, initial: int, desc: str):
        self.total, self.n, self.desc = total, initial, desc
        self.start, self.postfix = time.monotonic(), ""
        self.next = (initial * 10 // max(total, 1) + 1) * total / 10

    def update(self, k: int = 1) -> None:
        self.n += k
        if self.n >= self.next or self.n >= self.total:
            self.next = (self.n * 10 // max(self.total, 1) + 1) * self.total / 10
            print(
                f"[normlab] {self.desc}: step {self.n}/{self.total} ({100 * self.n // max(self.total, 1)}%)"
                f"{self.postfix}, {duration(time.monotonic() - self.start)}",
                file=sys.stderr,
                flush=True,
            )

    def set_postfix(self, **kv) -> None:
        self.postfix = "".join(f", {k} {v}" for k, v in kv.items())

    def close(self) -> None:
        pass


def training_bar(total: int, initial: int, desc: str, enabled: bool):
    """A tqdm bar on a terminal, :class:`Lines` in a log, nothing when ``enabled`` is false."""
    from tqdm import tqdm

    if enabled and not _terminal():
        return Lines(total, initial, desc)
    return tqdm(
        total=total,
        initial=initial,
        disable=not enabled,
        desc=desc,
        dynamic_ncols=True,
        leave=False,
    )


def duration(s: float) -> str:
    return f"{s / 3600:.1f} h" if s >= 5400 else f"{s / 60:.0f} min" if s >= 90 else f"{s:.0f} s"


def eta_line(done: int, total: int, new: int, elapsed: float, tag: str = "reproduce") -> str:
    """A slice's progress: runs finished of the study, this slice's share, and an ETA extrapolated
    from this slice's rate only (runs finished before it say nothing about how long one takes)."""
    if done >= total:
        eta = "all done"
    elif new <= 0:
        eta = "ETA after the first run"
    else:
        eta = f"ETA {duration(elapsed / new * (total - done))}"
    return f"[{tag}] {done}/{total} runs done ({new} in this slice, {duration(elapsed)}), {eta}"
