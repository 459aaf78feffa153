"""Test-only fault injection (``NORMLAB_FAULT``): real kills, raised errors and NaN losses at
named points of the training loop, so the failure and resume paths are tested for real."""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Optional


class InjectedFault(RuntimeError):
    """Raised by a NORMLAB_FAULT ``raise`` spec (tests of the failure path)."""


FAULT_POINTS = ("loss", "step", "save", "eval")


def parse_faults(spec: Optional[str], run_dir: Path) -> dict:
    """Test-only fault injection from ``NORMLAB_FAULT``: comma-separated ``action:point:step[:match]``.

    action: ``kill`` (SIGKILL, a real kill -9 of this process), ``raise`` or ``nan`` (the loss
    becomes NaN); point: ``loss`` (before the divergence check), ``step`` (after the optimizer
    step, before the step is counted), ``save`` (between moving last.pt to prev.pt and moving the
    new file in), ``eval`` (after the valid record is logged, before any checkpoint); step: the
    training step it fires at; match: only in run directories whose path contains this text.
    """
    faults = {}
    for item in filter(None, (spec or "").split(",")):
        action, point, step, *match = item.strip().split(":", 3)
        if action not in ("kill", "raise", "nan") or point not in FAULT_POINTS:
            raise ValueError(
                f"NORMLAB_FAULT item {item!r}: want kill|raise|nan:{'|'.join(FAULT_POINTS)}:STEP"
            )
        if not match or match[0] in str(run_dir):
            faults[point] = (action, int(step))
    return faults


def fire(faults: dict, point: str, step: int, loss=None):
    """The fault ``faults`` holds for ``point`` at ``step``, if any: SIGKILL, InjectedFault, or the
    loss made NaN (returned; ``loss`` unchanged otherwise)."""
    action, at = faults.get(point, (None, -1))
    if step != at:
        return loss
    if action == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    if action == "raise":
        raise InjectedFault(f"NORMLAB_FAULT: injected failure at {point} of step {step}")
    return loss * float("nan") if loss is not None else loss
