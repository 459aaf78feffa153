"""A claim row's cells as every findings table prints them (the paper's and a claims file's), so
the two tables cannot drift apart in how a verdict, a difference or an interval reads."""

from __future__ import annotations

import math
from typing import Optional

from . import stats as S
from .aggregate import fmt
from .verdicts import Finding


def num(x: Optional[float], unit: str, signed: bool = False) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    return fmt(x, "loss" if unit == "gap" else unit, signed)


def p_text(p: Optional[float]) -> str:
    return "–" if p is None or math.isnan(p) else f"{p:.3g}"


def head(f: Finding) -> list[str]:
    """claim, task, form, verdict, uncorrected, n, difference as claimed, 90% CI, margin."""
    ci = f.ci90
    return [
        f.claim.text,
        f.column,
        {S.NONINFERIOR: "A ≥ B", S.OVERFIT: "A overfits B"}.get(f.claim.form, "A > B"),
        f.shown(),
        f.verdict("raw"),
        str(f.n),
        num(f.diff, f.unit, True),
        "–" if ci is None else f"[{num(ci[0], f.unit, True)}, {num(ci[1], f.unit, True)}]",
        "–" if f.margin is None else f"±{f.margin:g}",
    ]
