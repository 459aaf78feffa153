"""Seeds added in looks, simulated: one family of rows, many studies at once.

- ``sequential_family``: the declared procedure on given per-seed differences (each look tests
  every open row's hypotheses on its first n seeds, report/hypotheses.py; each hypothesis's p_seq =
  K x its smallest p so far; Holm over every hypothesis of every row; a row stops once Holm rejects
  one of its hypotheses). The planning script and the error-rate tests run it.
- ``resolve_chance``: the futility rule's number. For rows already tested on n seeds (each stream's
  mean and SD, each hypothesis's smallest p so far), the chance that each open row resolves by the
  last look if it keeps gaining seeds, under the posterior predictive of its differences: sigma^2
  from its SD (scaled inverse chi-square, n - 1 degrees of freedom), the mean from N(observed mean,
  sigma^2 / n), the added seeds from N(mean, sigma^2); the two streams of an overfitting row are
  drawn independently (their correlation is ignored: the chance is a plan, not a test). Drawing
  the mean and spread, rather than plugging the estimates in, keeps the chance honest about an
  effect seen on five seeds.

Stopping a row's seeds for futility never raises the family-wise error: each hypothesis's p_seq is
K x its smallest p over the looks, valid however the adding stops (Bonferroni over every look that
could be made), and Holm's adjusted p-values only grow when an input p grows, so a rule that only
adds fewer seeds can remove rejections, never add one (tests/test_sequential.py checks both).
"""

from __future__ import annotations

import math
from typing import Callable, NamedTuple, Sequence

import numpy as np

from . import hypotheses as H


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


class Layout:
    """Where each row's hypotheses sit in the flat list Holm adjusts: rows in order, each row's
    hypotheses in hypotheses.row's order; rows of one form are computed together."""

    def __init__(self, forms: Sequence[str]):
        self.forms = list(forms)
        self.rows = len(self.forms)
        self.cls, self.row_of, self.groups = [], [], {}
        for r, form in enumerate(self.forms):
            first = len(self.cls)
            self.cls += H.classes(form)
            self.row_of += [r] * (len(self.cls) - first)
            rows, pos = self.groups.setdefault(form, ([], []))
            rows.append(r)
            pos.append(list(range(first, len(self.cls))))
        self.row_of = np.asarray(self.row_of, int)
        self.streams = max((H.streams_of(f) for f in self.forms), default=1)

    @property
    def size(self) -> int:
        return len(self.cls)

    def pvalues(self, mean, se, df, margins) -> np.ndarray:
        """[..., H]: every hypothesis's p from the rows' streams (mean, se: [..., R, C]; df
        broadcast against [..., R])."""
        margins = np.asarray(margins, float)
        out = np.ones(mean.shape[:-2] + (self.size,))
        df = np.broadcast_to(df, mean.shape[:-1])
        for form, (rows, pos) in self.groups.items():
            streams = [
                H.Stream(mean[..., rows, c], se[..., rows, c], df[..., rows])
                for c in range(H.streams_of(form))
            ]
            for j, h in enumerate(H.row(form, margins[rows], streams)):
                out[..., np.asarray(pos)[:, j]] = np.nan_to_num(h.p, nan=1.0)
        return out

    def per_row(self, flags: np.ndarray) -> np.ndarray:
        """[..., R]: whether any hypothesis of each row is flagged ([..., H])."""
        out = np.zeros(flags.shape[:-1] + (self.rows,), bool)
        for r in range(self.rows):
            out[..., r] = flags[..., self.row_of == r].any(-1)
        return out

    def verdicts(self, rejected: np.ndarray) -> np.ndarray:
        """[..., R]: each row's class, an index into hypotheses.PRECEDENCE (its length: unresolved)."""
        out = np.full(rejected.shape[:-1] + (self.rows,), len(H.PRECEDENCE))
        for form, (rows, pos) in self.groups.items():
            out[..., rows] = H.decide(form, rejected[..., np.asarray(pos)])
        return out


class Outcome(NamedTuple):
    rejected: np.ndarray  # [S, H] hypotheses Holm rejected by the row's last look
    verdict: np.ndarray  # [S, R] class index (hypotheses.PRECEDENCE; its length: unresolved)
    used: np.ndarray  # [S, R] seeds each row used
    resolved: np.ndarray  # [S, R] rows resolved (one of their hypotheses rejected)


def _looks(at: Callable, layout: Layout, margins, sizes, alpha, pmin, open_) -> Outcome:
    """Run the looks ``sizes`` from state (``pmin`` [S, H], ``open_`` [S, R]). ``at(n)`` gives the
    rows' (mean [S, R, C], se [S, R, C], new [S, R]) at look n, ``new`` marking the rows with a test
    there."""
    K = len(sizes)
    S_, R = open_.shape
    rejected = np.zeros((S_, layout.size), bool)
    used = np.full((S_, R), sizes[-1])
    closed = ~open_
    for n in sizes:
        mean, se, new = at(n)
        p = layout.pvalues(mean, se, n - 1, margins)
        testing = (open_ & new)[:, layout.row_of]
        pmin = np.where(testing, np.minimum(pmin, p), pmin)
        rejected |= holm_rows(np.minimum(1.0, K * pmin)) < alpha
        stop = open_ & layout.per_row(rejected)
        used = np.where(stop, n, used)
        open_ = open_ & ~stop
    return Outcome(rejected, layout.verdicts(rejected), used, ~open_ & ~closed)


def _streams(d: np.ndarray) -> np.ndarray:
    """[S, R, N, C]: per-seed differences with a stream axis (one stream when ``d`` has none)."""
    d = np.asarray(d, float)
    return d[..., None] if d.ndim == 3 else d


def sequential_family(
    d: np.ndarray,
    forms: Sequence[str],
    margins: np.ndarray,
    sizes: Sequence[int],
    alpha: float,
) -> Outcome:
    """Seeds added until each row resolves, for one family of R rows in each of S studies at once.

    ``d``: [S, R, N] per-seed differences (positive = as claimed) in the order the seeds would be
    added (N >= sizes[-1]), or [S, R, N, C] with a stream axis (an overfitting row's train
    difference, then its valid difference; a one-stream row reads stream 0); ``forms``: [R] each
    row's claim form; ``margins``: [R]. At each look every still-open row's hypotheses are tested
    on its first n seeds, each hypothesis's p_seq is K x its smallest p so far, Holm adjusts every
    hypothesis of every row, and a row stops once Holm rejects one of its hypotheses."""
    d = _streams(d)
    S_, R = d.shape[:2]
    layout = Layout(forms)

    def at(n):
        x = d[:, :, :n]
        return x.mean(2), x.std(2, ddof=1) / math.sqrt(n), np.ones((S_, R), bool)

    start = np.ones((S_, layout.size))
    return _looks(at, layout, margins, sizes, alpha, start, np.ones((S_, R), bool))


def resolve_chance(
    n: Sequence[int],
    mean: np.ndarray,
    sd: np.ndarray,
    p_seq: Sequence[float],
    open_: Sequence[bool],
    forms: Sequence[str],
    margins: Sequence[float],
    sizes: Sequence[int],
    alpha: float,
    studies: int = 4000,
    seed: int = 0,
) -> np.ndarray:
    """[R]: the chance each ``open_`` row of one family resolves (Holm rejects one of its
    hypotheses) by the last look if every open row gains seeds at each look after its ``n``; NaN
    for a closed row, and for an open row whose SD cannot be drawn from (n < 2 or no spread).
    ``mean``, ``sd``: [R] or [R, C] (each stream's); ``p_seq``: [H] every hypothesis's (K x its
    smallest p so far), in the rows' order: the other rows stay in Holm's family with theirs."""
    layout = Layout(forms)
    n = np.asarray(n, int)
    mean, sd = np.asarray(mean, float), np.asarray(sd, float)
    if mean.ndim == 1:
        mean, sd = mean[:, None], sd[:, None]
    used = np.array([[c < H.streams_of(f) for c in range(mean.shape[1])] for f in forms])
    sd = np.where(used, sd, 1.0)
    mean = np.where(used, mean, 0.0)
    open_ = np.asarray(open_, bool)
    R, K, C = n.size, len(sizes), mean.shape[1]
    drawable = open_ & (n >= 2) & np.all(sd > 0, -1)
    rng = np.random.default_rng(seed)
    dof = np.maximum(n - 1, 1)[:, None]
    n_ = np.maximum(n, 1)[:, None]
    s2 = np.where(drawable[:, None], np.maximum(sd, 1e-300) ** 2, 0.0)
    sigma2 = dof * s2 / rng.chisquare(dof, (studies, R, C))
    mu = mean + np.sqrt(sigma2 / n_) * rng.standard_normal((studies, R, C))
    extra = max(0, sizes[-1] - int(n[open_].min(initial=sizes[-1])))
    x = mu[..., None] + np.sqrt(sigma2)[..., None] * rng.standard_normal((studies, R, C, extra))
    # the running sums of the seeds so far and of the added ones (zero added at index 0)
    c1 = np.concatenate([np.zeros((studies, R, C, 1)), np.cumsum(x, -1)], -1)
    c2 = np.concatenate([np.zeros((studies, R, C, 1)), np.cumsum(x * x, -1)], -1)
    s1_0, s2_0 = n_ * mean, dof * sd**2 + n_ * mean**2

    def at(size):
        k = np.clip(size - n, 0, extra)
        new = np.broadcast_to((size > n) & drawable, (studies, R))
        take = np.broadcast_to(k[None, :, None, None], (studies, R, C, 1))
        m = (s1_0 + np.take_along_axis(c1, take, -1)[..., 0]) / size
        var = (s2_0 + np.take_along_axis(c2, take, -1)[..., 0] - size * m * m) / (size - 1)
        return m, np.sqrt(np.maximum(var, 0.0) / size), new

    pmin = np.broadcast_to(
        np.minimum(1.0, np.asarray(p_seq, float) / K), (studies, layout.size)
    ).copy()
    start = np.broadcast_to(drawable, (studies, R)).copy()
    out = _looks(at, layout, margins, sizes, alpha, pmin, start)
    return np.where(drawable, out.resolved.mean(0), np.nan)
