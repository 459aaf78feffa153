"""Each claim row's hypotheses: one test per way the row can be decided, so that every verdict
word (supported, refuted, negligible) comes from a rejection whose error the family controls.

A row's per-seed differences (positive = as claimed) are one stream, or two for the overfitting
form (train loss and valid loss). Each hypothesis is a one-sided t-test of a stream's mean against
a bound, or an intersection-union test of several (its p is the largest of theirs, valid at alpha
without adjustment: Berger 1982). A row's verdict is read from which of its hypotheses Holm
rejects, in one order, so the classes never overlap:

1. negligible: the equivalence test (TOST) rejects, |effect| < margin; a significant effect inside
   ±margin reads negligible, never supported;
2. supported: the claim's own hypothesis rejects (beyond -margin for "A ≥ B"; beyond 0 for "A > B";
   for "overfits", train loss lower *and* valid loss higher);
3. refuted: its opposite rejects (below -margin; below 0; valid loss lower or train loss higher);
4. else unresolved.

Every hypothesis of every tested row of a family goes into one Holm family (family.py), each with
its look-spent p (K x its smallest p over the looks made), so the chance of any false support,
refutation or negligibility anywhere in the family is at most alpha however seeds are added.
The functions take numpy arrays, so the simulation of many studies (sequential.py) and the report
of one decide a row by the same code.
"""

from __future__ import annotations

import math
from typing import NamedTuple, Optional, Sequence

import numpy as np
from scipy import stats

from .stats import NONINFERIOR, OVERFIT, SUPERIOR

SUPPORT, REFUTE, NEGLIGIBLE = "support", "refute", "negligible"
# a row's hypotheses are checked in this order: the first class Holm rejects decides it
PRECEDENCE = (NEGLIGIBLE, SUPPORT, REFUTE)


class Stream(NamedTuple):
    """One stream of a row's differences at a look: mean, standard error and degrees of freedom
    (arrays broadcast together: one entry per simulated study, or scalars for one report)."""

    mean: np.ndarray
    se: np.ndarray
    df: np.ndarray


class Hyp(NamedTuple):
    cls: str  # SUPPORT, REFUTE or NEGLIGIBLE
    what: str  # the alternative it shows, in words
    p: np.ndarray


def above(s: Stream, bound: float) -> np.ndarray:
    """p of H0: mean ≤ bound (rejected: the mean is above it)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return stats.t.sf((s.mean - bound) / s.se, s.df)


def below(s: Stream, bound: float) -> np.ndarray:
    """p of H0: mean ≥ bound (rejected: the mean is below it)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return stats.t.cdf((s.mean - bound) / s.se, s.df)


def within(s: Stream, margin: float) -> np.ndarray:
    """TOST: p of H0: |mean| ≥ margin (rejected: the mean lies within ±margin)."""
    return np.maximum(above(s, -margin), below(s, margin))


def streams_of(form: str) -> int:
    return 2 if form == OVERFIT else 1


def row(form: str, margin: float, s: Sequence[Stream]) -> list[Hyp]:
    """The hypotheses of one row of ``form`` with ``margin``; ``s``: its streams (the overfitting
    form's train difference first, then its valid difference, each positive = as claimed)."""
    if form == NONINFERIOR:
        (d,) = s
        return [
            Hyp(SUPPORT, "A − B > −margin", above(d, -margin)),
            Hyp(REFUTE, "A − B < −margin", below(d, -margin)),
        ]
    if form == SUPERIOR:
        (d,) = s
        return [
            Hyp(SUPPORT, "A − B > 0", above(d, 0.0)),
            Hyp(REFUTE, "A − B < 0", below(d, 0.0)),
            Hyp(NEGLIGIBLE, "|A − B| < margin", within(d, margin)),
        ]
    if form == OVERFIT:
        train, valid = s
        return [
            Hyp(
                SUPPORT,
                "train loss lower and valid loss higher",
                np.maximum(above(train, 0.0), above(valid, 0.0)),
            ),
            Hyp(REFUTE, "valid loss lower", below(valid, 0.0)),
            Hyp(REFUTE, "train loss higher", below(train, 0.0)),
            Hyp(NEGLIGIBLE, "|valid loss difference| < margin", within(valid, margin)),
        ]
    raise ValueError(f"unknown claim form {form!r}")


def classes(form: str) -> list[str]:
    """The class of each hypothesis ``row`` returns for ``form``, in its order."""
    one = Stream(np.zeros(()), np.ones(()), np.ones(()))
    return [h.cls for h in row(form, 1.0, [one] * streams_of(form))]


def decide(form: str, rejected: np.ndarray) -> np.ndarray:
    """The class index (PRECEDENCE; len(PRECEDENCE) = unresolved) of rows of ``form`` whose
    hypotheses' rejections are ``rejected`` [..., H] (H in ``classes(form)``' order)."""
    cls = np.asarray(classes(form))
    out = np.full(rejected.shape[:-1], len(PRECEDENCE))
    for i, c in reversed(list(enumerate(PRECEDENCE))):
        out = np.where((rejected & (cls == c)).any(-1), i, out)
    return out


def stream_stats(x: np.ndarray, axis: int = -1) -> Stream:
    """A stream's mean, standard error and degrees of freedom over ``axis`` (the seeds)."""
    n = x.shape[axis]
    return Stream(
        x.mean(axis), x.std(axis, ddof=1) / np.sqrt(n), np.full(x.mean(axis).shape, n - 1)
    )


def paired_stream(d: Sequence[float]) -> Optional[Stream]:
    """A paired stream's mean, standard error and df; None below 2 differences or without spread."""
    if len(d) < 2 or float(np.std(d, ddof=1)) == 0:
        return None
    return stream_stats(np.asarray(d, float))


def welch_stream(a: Sequence[float], b: Sequence[float]) -> Optional[Stream]:
    """Two unpaired samples' mean difference, its standard error and Welch's df."""
    if len(a) < 2 or len(b) < 2:
        return None
    va, vb = float(np.var(a, ddof=1)) / len(a), float(np.var(b, ddof=1)) / len(b)
    if va + vb == 0:
        return None
    df = (va + vb) ** 2 / (va**2 / (len(a) - 1) + vb**2 / (len(b) - 1))
    return Stream(np.float64(np.mean(a) - np.mean(b)), np.float64(math.sqrt(va + vb)), df)


def hypotheses_of(form: str, margin: float, streams: list) -> list[dict]:
    return [{"cls": h.cls, "what": h.what, "p": float(h.p)} for h in row(form, margin, streams)]


def look_spent(
    hyps: list[dict],
    form: str,
    margin: float,
    d: list[list[float]],
    ranks: list[int],
    seeds_run: int,
    sizes: Sequence[int],
) -> None:
    """Each hypothesis's p valid under adding seeds over the looks ``sizes``: K = len(sizes) times
    its smallest p of the looks made, capped at 1 (Bonferroni spending, alpha / K per look). Look
    k tests the differences whose seed is among the first sizes[k] of the ``seeds_run`` seeds the
    two norms ran (``ranks``: each difference's seed's position, in the order seeds were added); a
    look is made once that many seeds have run (with fewer than the first, the one look uses them
    all)."""
    made = [n for n in sizes if n <= seeds_run] or [seeds_run]
    best = [math.inf] * len(hyps)
    for n in made:
        streams = [paired_stream([x for x, r in zip(col, ranks) if r < n]) for col in d]
        if any(st is None for st in streams):
            continue
        for i, h in enumerate(hypotheses_of(form, margin, streams)):
            best[i] = min(best[i], h["p"])
    for h, b in zip(hyps, best):
        h["p_seq"] = min(1.0, len(sizes) * b) if math.isfinite(b) else None
