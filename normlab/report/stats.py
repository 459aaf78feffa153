"""The statistics of the findings, from scipy and statsmodels (tests/test_stats.py checks each
against a textbook value).

- ``paired``: a claim compares two norms on the seeds both completed. The runs of one seed share
  their training subset, data order and the initialization of the parameters the norms share, so
  the difference is taken seed by seed and tested with a paired t-test (two-sided: a claim may
  fail either way), with its 90% confidence interval, the TOST equivalence test against the
  metric's margin (statsmodels ``ttost_paired``) and the minimum detectable effect at 80% power.
- ``adjust``: Holm (family-wise error) and Benjamini-Hochberg (false discovery rate) over one
  family of tests (statsmodels ``multipletests``).
- ``sign_test``: across tasks, is A better on more tasks than a coin would be? Only the sign of each
  task's mean difference counts, so one task with a huge effect cannot carry it; two-sided.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np
from scipy import optimize, stats
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.weightstats import ttost_paired


@dataclass
class Paired:
    n: int  # seeds both norms completed
    diff: float  # mean of a - b
    sd: float  # sample std of the per-seed differences
    t: Optional[float] = None
    p: Optional[float] = None  # two-sided paired t-test
    ci90: Optional[tuple[float, float]] = None
    p_tost: Optional[float] = None  # equivalence within ±margin
    margin: Optional[float] = None


def paired(a: Sequence[float], b: Sequence[float], margin: Optional[float] = None) -> Paired:
    """Paired tests of a - b (matched by position). With fewer than 2 pairs or no spread of the
    differences the tests are undefined and left None."""
    d = [x - y for x, y in zip(a, b)]
    n = len(d)
    out = Paired(
        n,
        statistics.fmean(d) if d else math.nan,
        statistics.stdev(d) if n >= 2 else math.nan,
        margin=margin,
    )
    if n < 2 or out.sd == 0:
        return out
    res = stats.ttest_rel(a, b)
    out.t, out.p = float(res.statistic), float(res.pvalue)
    half = stats.t.ppf(0.95, n - 1) * out.sd / math.sqrt(n)
    out.ci90 = (float(out.diff - half), float(out.diff + half))
    if margin is not None:
        out.p_tost = float(
            ttost_paired(np.asarray(a, float), np.asarray(b, float), -margin, margin)[0]
        )
    return out


def mde(n: int, sd: float, alpha: float, power: float = 0.8) -> Optional[float]:
    """The smallest true mean difference a two-sided paired t-test of n pairs detects with the
    given power at level alpha, for differences of standard deviation sd."""
    if n < 2 or not math.isfinite(sd) or sd == 0:
        return None
    # The power of the two-sided paired t-test from scipy's noncentral t. statsmodels' TTestPower
    # gives the same (tests/test_stats.py) but returns NaN for the effect sizes (10-1000 sd) that 2-3
    # pairs at a corrected alpha need, and its solve_power stops at 10.
    df, crit = n - 1, float(stats.t.isf(alpha / 2, n - 1))

    def short(d):
        nc = d * math.sqrt(n)
        upper, lower = float(stats.nct.sf(crit, df, nc)), float(stats.nct.cdf(-crit, df, nc))
        return (
            (upper if math.isfinite(upper) else 1.0)
            + (lower if math.isfinite(lower) else 0.0)
            - power
        )

    hi = 1.0
    while short(hi) < 0:
        hi *= 2
        if hi > 1e9:
            return None
    return float(optimize.brentq(short, 0.0, hi, xtol=1e-12)) * sd


def adjust(
    pvalues: Sequence[Optional[float]],
) -> tuple[list[Optional[float]], list[Optional[float]]]:
    """(Holm, BH) adjusted p-values over the entries that have a p, in the input order; None (no
    test) stays None and does not count in the family's size."""
    idx = [i for i, p in enumerate(pvalues) if p is not None and not math.isnan(p)]
    out_h: list[Optional[float]] = [None] * len(pvalues)
    out_b: list[Optional[float]] = [None] * len(pvalues)
    if not idx:
        return out_h, out_b
    ps = [float(pvalues[i]) for i in idx]
    h = multipletests(ps, method="holm")[1]
    b = multipletests(ps, method="fdr_bh")[1]
    for j, i in enumerate(idx):
        out_h[i], out_b[i] = float(h[j]), float(b[j])
    return out_h, out_b


def holm(pvalues: Sequence[float]) -> list[float]:
    return adjust(pvalues)[0]


def bh(pvalues: Sequence[float]) -> list[float]:
    return adjust(pvalues)[1]


def sign_test(diffs: Sequence[float]) -> dict:
    """Exact binomial sign test on per-task differences (positive = as claimed); ties (exactly 0)
    are dropped, as is standard. ``p`` is two-sided."""
    wins = sum(d > 0 for d in diffs)
    losses = sum(d < 0 for d in diffs)
    n = wins + losses
    if n == 0:
        return {"wins": 0, "losses": 0, "n": 0, "p": None}
    return {
        "wins": wins,
        "losses": losses,
        "n": n,
        "p": float(stats.binomtest(wins, n, 0.5).pvalue),
    }
