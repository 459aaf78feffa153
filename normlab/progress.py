"""Progress: tqdm bars for a job's long loops (evaluation, decoding, BPE learning), on when the
job's ``progress=true`` (the runner sets it once, so tasks need no flag passed down); and the
progress line of a study's slice (runs done / total with an ETA), printed once per finished run so
that it reads well in a log file."""
from __future__ import annotations



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
