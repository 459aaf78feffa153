"""Seeds added in looks, simulated: one family of rows, many studies at once.

- ``sequential_family``: the declared procedure on given per-seed differences (each look tests
  every open row on its first n seeds, p_seq = K x its smallest p so far, Holm over the rows, a row
  stops once rejected or decided by its 90% CI). The planning script and the error-rate tests
  run it.
- ``resolve_chance``: the futility rule's number. For rows already tested on n seeds (their mean,
  SD and smallest p so far), the chance that each open row resolves by the last look if it keeps
  gaining seeds, under the posterior predictive of its differences: sigma^2 from its SD (scaled
  inverse chi-square, n - 1 degrees of freedom), the mean from N(observed mean, sigma^2 / n), the
  added seeds from N(mean, sigma^2). Drawing the mean and spread, rather than plugging the estimates
  in, keeps the chance honest about an effect seen on five seeds.

Stopping a row's seeds for futility never raises the family-wise error: each row's p_seq is K x its
smallest p over the looks, valid however the adding stops (Bonferroni over every look that could
be made), so a rule that only adds fewer seeds is non-binding; it can only cost rows a verdict.
"""

from __future__ import annotations

import math
from typing import Callable, Sequence

import numpy as np
from scipy import stats


def holm_rows(p: np.ndarray) -> np.ndarray:
    """Holm-adjusted p-values along the last axis (one family per leading index): the same values
    as statsmodels' multipletests(method="holm") row by row, for many simulated studies at once."""
    p = np.asarray(p, float)
    m = p.shape[-1]
    order = np.argsort(p, axis=-1)
    ranked = np.take_along_axis(p, order, axis=-1) * (m - np.arange(m))
    adj = np.minimum(np.maximum.accumulate(ranked, axis=-1), 1.0)
    out = np.empty_like(adj)
    np.put_along_axis(out, order, adj, axis=-1)
    return out


def _looks(at: Callable, noninferior, margins, sizes, alpha, pmin, open_):
    """Run the looks ``sizes`` from state (``pmin``, ``open_``: [S, R]). ``at(n)`` gives the rows'
    (mean, se, new) at look n, ``new`` marking the rows with a test there. Returns the rejected
    rows, the seeds each used and the resolved ones, as sequential_family."""
    K = len(sizes)
    S_, R = pmin.shape
    ni = np.broadcast_to(np.asarray(noninferior, bool), (S_, R))
    mg = np.broadcast_to(np.asarray(margins, float), (S_, R))
    rejected = np.zeros((S_, R), bool)
    used = np.full((S_, R), sizes[-1])
    closed = ~open_
    for n in sizes:
        mean, se, new = at(n)
        with np.errstate(divide="ignore", invalid="ignore"):
            p = np.where(
                ni,
                stats.t.sf((mean + mg) / se, n - 1),
                2 * stats.t.sf(np.abs(mean / se), n - 1),
            )
        pmin = np.where(open_ & new, np.minimum(pmin, np.nan_to_num(p, nan=1.0)), pmin)
        rejected |= holm_rows(np.minimum(1.0, K * pmin)) < alpha
        half = stats.t.ppf(0.95, n - 1) * se
        decided = new & np.where(ni, mean + half < -mg, (mean - half > -mg) & (mean + half < mg))
        stop = open_ & (rejected | decided)
        used = np.where(stop, n, used)
        open_ = open_ & ~stop
    return rejected, used, ~open_ & ~closed


def sequential_family(
    d: np.ndarray,
    noninferior: np.ndarray,
    margins: np.ndarray,
    sizes: Sequence[int],
    alpha: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Seeds added until each row resolves, for one family of R rows in each of S studies at once.

    ``d``: [S, R, N] per-seed differences (positive = as claimed) in the order the seeds would be
    added (N >= sizes[-1]); ``noninferior``: [R] which rows are "A ≥ B"; ``margins``: [R]. At each
    look every still-open row is tested on its first n seeds, its p_seq is K x its smallest p so
    far, Holm adjusts all rows' p_seq, and a row stops once Holm rejects it or its 90% CI decides it
    (inferior: below -margin; equivalent: within ±margin for a strict claim). Returns the rejected
    rows [S, R], the seeds each row used [S, R] and the resolved rows (rejected or decided) [S, R]."""
    d = np.asarray(d, float)
    S_, R, _ = d.shape

    def at(n):
        x = d[:, :, :n]
        return x.mean(-1), x.std(-1, ddof=1) / math.sqrt(n), np.ones((S_, R), bool)

    start = np.ones((S_, R))
    return _looks(at, noninferior, margins, sizes, alpha, start, np.ones((S_, R), bool))


def resolve_chance(
    n: Sequence[int],
    mean: Sequence[float],
    sd: Sequence[float],
    p_seq: Sequence[float],
    open_: Sequence[bool],
    noninferior: Sequence[bool],
    margins: Sequence[float],
    sizes: Sequence[int],
    alpha: float,
    studies: int = 4000,
    seed: int = 0,
) -> np.ndarray:
    """[R]: the chance each ``open_`` row of one family resolves (Holm rejects it, or its 90% CI
    decides it) by the last look if every open row gains seeds at each look after its ``n``; NaN
    for a closed row, and for an open row whose SD cannot be drawn from (n < 2 or no spread).
    The other rows stay in Holm's family with their ``p_seq`` (K x their smallest p so far)."""
    n = np.asarray(n, int)
    mean, sd = np.asarray(mean, float), np.asarray(sd, float)
    open_ = np.asarray(open_, bool)
    R, K = n.size, len(sizes)
    drawable = open_ & (n >= 2) & (sd > 0)
    rng = np.random.default_rng(seed)
    dof = np.maximum(n - 1, 1)
    s2 = np.where(drawable, np.maximum(sd, 1e-300) ** 2, 0.0)
    sigma2 = dof * s2 / rng.chisquare(dof, (studies, R))
    mu = mean + np.sqrt(sigma2 / np.maximum(n, 1)) * rng.standard_normal((studies, R))
    extra = max(0, sizes[-1] - int(n[open_].min(initial=sizes[-1])))
    x = mu[..., None] + np.sqrt(sigma2)[..., None] * rng.standard_normal((studies, R, extra))
    # the running sums of the seeds so far and of the added ones (zero added at index 0)
    c1 = np.concatenate([np.zeros((studies, R, 1)), np.cumsum(x, -1)], -1)
    c2 = np.concatenate([np.zeros((studies, R, 1)), np.cumsum(x * x, -1)], -1)
    s1_0, s2_0 = n * mean, dof * sd**2 + n * mean**2

    def at(size):
        k = np.clip(size - n, 0, extra)
        new = np.broadcast_to((size > n) & drawable, (studies, R))
        take = np.broadcast_to(k[None, :, None], (studies, R, 1))
        m = (s1_0 + np.take_along_axis(c1, take, -1)[..., 0]) / size
        var = (s2_0 + np.take_along_axis(c2, take, -1)[..., 0] - size * m * m) / (size - 1)
        return m, np.sqrt(np.maximum(var, 0.0) / size), new

    pmin = np.broadcast_to(np.minimum(1.0, np.asarray(p_seq, float) / K), (studies, R)).copy()
    start = np.broadcast_to(drawable, (studies, R)).copy()
    _, _, resolved = _looks(at, noninferior, margins, sizes, alpha, pmin, start)
    return np.where(drawable, resolved.mean(0), np.nan)
