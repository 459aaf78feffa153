"""The statistics of the findings, from scipy and statsmodels (tests/test_stats.py checks each
against a textbook value).

- A claim compares two norms on the seeds both completed. The runs of one seed share their
  training subset, data order and the initialization of the parameters the norms share, so the
  difference is taken seed by seed (a paired design) and tested as one sample of differences.
- ``by_form``: a claim row's difference, t and 90% CI by the claim's form ("A ≥ B" against
  -margin, "A > B" against 0), for the tables; the verdicts come from report/hypotheses.py, one
  one-sided test per verdict class; ``welch_by_form`` the same for two samples whose seeds do not
  pair.
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

from scipy import optimize, stats
from statsmodels.stats.multitest import multipletests

NONINFERIOR, SUPERIOR = "non-inferiority", "superiority"
# "A overfits more than B": A's train loss lower and its valid loss higher (report/hypotheses.py)
OVERFIT = "overfit"


@dataclass
class RowTest:
    """One claim row's test of the per-seed differences d (positive = as claimed)."""

    form: str  # NONINFERIOR or SUPERIOR
    n: int
    diff: float  # mean of d
    sd: float  # sample std of d
    margin: Optional[float] = None
    t: Optional[float] = None
    p: Optional[float] = None  # non-inferiority: one-sided against -margin; superiority: two-sided
    ci90: Optional[tuple[float, float]] = None


def by_form(d: Sequence[float], form: str, margin: Optional[float]) -> RowTest:
    """The test of a claim row's differences ``d`` by the claim's form. Undefined (None) with fewer
    than 2 differences, no spread, or a non-inferiority claim without a margin."""
    n = len(d)
    out = RowTest(
        form,
        n,
        statistics.fmean(d) if d else math.nan,
        statistics.stdev(d) if n >= 2 else math.nan,
        margin,
    )
    if n < 2 or out.sd == 0 or (form == NONINFERIOR and margin is None):
        return out
    if form == NONINFERIOR:
        res = stats.ttest_1samp(d, -margin, alternative="greater")
    else:
        res = stats.ttest_1samp(d, 0.0)
    out.t, out.p = float(res.statistic), float(res.pvalue)
    half = stats.t.ppf(0.95, n - 1) * out.sd / math.sqrt(n)
    out.ci90 = (float(out.diff - half), float(out.diff + half))
    return out


def welch_by_form(
    a: Sequence[float], b: Sequence[float], form: str, margin: Optional[float]
) -> RowTest:
    """``by_form`` for two samples that do not pair (no seed run by both): Welch's t-test of
    mean(a) − mean(b) and its 90% Welch interval. ``n`` is the smaller sample and ``sd`` the SD of
    one draw's difference (sqrt(var a + var b)), so a minimum detectable effect reads as a paired one's
    at that n (conservative: the unpaired test is weaker)."""
    na, nb = len(a), len(b)
    diff = statistics.fmean(a) - statistics.fmean(b) if a and b else math.nan
    va = statistics.variance(a) if na >= 2 else math.nan
    vb = statistics.variance(b) if nb >= 2 else math.nan
    out = RowTest(form, min(na, nb), diff, math.sqrt(va + vb), margin)
    if na < 2 or nb < 2 or va + vb == 0 or (form == NONINFERIOR and margin is None):
        return out
    shift = margin if form == NONINFERIOR else 0.0
    alt = "greater" if form == NONINFERIOR else "two-sided"
    res = stats.ttest_ind([x + shift for x in a], b, equal_var=False, alternative=alt)
    out.t, out.p = float(res.statistic), float(res.pvalue)
    se2 = va / na + vb / nb
    df = se2**2 / ((va / na) ** 2 / (na - 1) + (vb / nb) ** 2 / (nb - 1))
    half = stats.t.ppf(0.95, df) * math.sqrt(se2)
    out.ci90 = (float(diff - half), float(diff + half))
    return out


def mde(n: int, sd: float, alpha: float, power: float = 0.8, sides: int = 2) -> Optional[float]:
    """The smallest true mean difference (beyond the null's boundary) a paired t-test of n pairs
    detects with the given power at level alpha, for differences of standard deviation sd;
    ``sides``: 2 for a two-sided test, 1 for a one-sided one (non-inferiority)."""
    if n < 2 or not math.isfinite(sd) or sd == 0:
        return None
    # The power of the paired t-test from scipy's noncentral t. statsmodels' TTestPower gives the
    # same (tests/test_stats.py) but returns NaN for the effect sizes (10-1000 sd) that 2-3 pairs at
    # a corrected alpha need, and its solve_power stops at 10.
    df, crit = n - 1, float(stats.t.isf(alpha / sides, n - 1))

    def short(d):
        nc = d * math.sqrt(n)
        upper = float(stats.nct.sf(crit, df, nc))
        lower = float(stats.nct.cdf(-crit, df, nc)) if sides == 2 else 0.0
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


def correlation(xs: Sequence[float], ys: Sequence[float]) -> Optional[float]:
    """Pearson's r of paired values; None below three pairs or without spread in either."""
    if len(xs) < 3 or len(set(xs)) < 2 or len(set(ys)) < 2:
        return None
    return float(statistics.correlation(xs, ys))


def look_sizes(first: int, step: int, max_seeds: int) -> list[int]:
    """The numbers of paired seeds at which a sequential row is tested: first, first + step, ..."""
    return list(range(first, max_seeds + 1, step)) if step > 0 else [first]


def seeds_to_resolve(
    sd: float, margin: Optional[float], alpha: float, sizes: Sequence[int], sides: int, power=0.8
) -> Optional[int]:
    """The first look size whose minimum detectable effect (at ``alpha``, the row's strictest
    level) is at most the margin, for differences of standard deviation ``sd``; None when even the
    last look's is not."""
    if margin is None or not math.isfinite(sd):
        return None
    for n in sizes:
        m = mde(n, sd, alpha, power, sides)
        if m is not None and m <= margin:
            return n
    return None
