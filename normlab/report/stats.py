"""Multiple-comparison corrections and the sign test the findings use.

Holm (step-down Bonferroni) controls the family-wise error rate: the chance of even one false
"significant" verdict among all tests of the findings table. Benjamini-Hochberg controls the false
discovery rate: the expected share of false verdicts among the significant ones; it is less strict
and assumes independent (or positively dependent) tests. Both are applied to the whole family of
tests in the findings table, not per claim, because a reader scans the whole table.

The sign test asks a question the per-task Welch tests cannot: across tasks, does A beat B more
often than a coin would? It uses only the sign of each task's mean difference, so one task with a
huge effect (enwik8) cannot carry it.
"""
from __future__ import annotations

import math
from typing import Optional, Sequence

from scipy import stats


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm-adjusted p-values, in the input order: the i-th smallest p (1-based) is multiplied by
    m - i + 1, made monotone (an adjusted p is never below one of a smaller raw p) and capped at 1.
    Rejecting where adjusted p < alpha is Holm's procedure at level alpha. No statsmodels: it is
    not a dependency and this is six lines."""
    m = len(pvalues)
    order = sorted(range(m), key=lambda i: pvalues[i])
    out = [1.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * pvalues[i]))
        out[i] = running
    return out


def bh(pvalues: Sequence[float]) -> list[float]:
    """Benjamini-Hochberg adjusted p-values (q-values), in the input order."""
    if not pvalues:
        return []
    return [float(q) for q in stats.false_discovery_control(list(pvalues), method="bh")]


def adjust(pvalues: Sequence[Optional[float]]) -> tuple[list[Optional[float]], list[Optional[float]]]:
    """(Holm, BH) adjusted p-values over the entries that have a p; None stays None (no test)."""
    idx = [i for i, p in enumerate(pvalues) if p is not None and not math.isnan(p)]
    ps = [float(pvalues[i]) for i in idx]
    h, b = holm(ps), bh(ps)
    out_h: list[Optional[float]] = [None] * len(pvalues)
    out_b: list[Optional[float]] = [None] * len(pvalues)
    for j, i in enumerate(idx):
        out_h[i], out_b[i] = h[j], b[j]
    return out_h, out_b


def sign_test(diffs: Sequence[float]) -> dict:
    """Exact binomial sign test on per-task differences (positive = as claimed); ties (exactly 0)
    are dropped, as is standard. Returns counts and both one-sided p-values:
    p_greater = P(X >= wins) (evidence for the claim), p_less = P(X <= wins) (evidence against)."""
    wins = sum(d > 0 for d in diffs)
    losses = sum(d < 0 for d in diffs)
    n = wins + losses
    if n == 0:
        return {"wins": 0, "losses": 0, "n": 0, "p_greater": None, "p_less": None}
    return {"wins": wins, "losses": losses, "n": n,
            "p_greater": float(stats.binomtest(wins, n, 0.5, alternative="greater").pvalue),
            "p_less": float(stats.binomtest(wins, n, 0.5, alternative="less").pvalue)}
