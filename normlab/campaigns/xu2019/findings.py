"""Does each claim of Xu et al. (2019) hold in our runs? One row per claim and task.

A claim compares two norms, "A better than B" (or, for overfitting, "A's valid loss rises more
after its minimum than B's"). Each row pairs the two norms' runs by seed (the runs of one seed share
their training subset, data order and the initialization of the parameters both norms have) and
tests the per-seed differences (stats.paired): a two-sided paired t-test, its 90% confidence
interval, and the TOST equivalence test against the metric's margin (claims.yaml). Holm and
Benjamini-Hochberg adjust both tests of every row, and the sign tests across tasks, over one
declared family (family.py), which also fixes the minimum detectable effect (80% power at the
family's strictest level alpha/m). Each corrected verdict is one of
- better (larger, for the rise): the difference test passes in the claimed direction;
- worse (smaller): it passes in the opposite direction;
- equivalent: the difference lies within ±margin (TOST passes);
- inconclusive: neither: the design cannot tell, which is not "no difference".
A strict claim ("A > B") holds where the verdict is better; a no-worse claim ("A ≥ B") is supported
where it is better or equivalent and refuted where it is worse. A norm that diverged in every run
while the other completed decides the row without a test; a task outside the overfitting regime
(overfit.py) has no row test for that claim. Cells first: a row where either norm did not train
(report.trained: not clearly better than the task's trivial baselines), or whose task is declared
outside the learning regime at its scale (claims.yaml ``not_learning``), has no test and is not in
the family.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from ...report import stats as S
from ...report.aggregate import NORM_LABELS, Cell, Grid, fmt
from ...report.claims import margin, not_learning, settings
from ...report.overfit import in_regime, regime_label, valid_rise
from . import published as P


@dataclass(frozen=True)
class Claim:
    key: str
    text: str
    a: str
    b: str
    strict: bool  # "A > B" (must be shown) rather than "A >= B" (must not be refuted)
    measure: str  # "metric" (test metric) or "rise" (valid-loss rise after its minimum, %)
    source: str


CLAIMS = [
    Claim(
        "ln_simple_no_worse",
        "Bias and gain do not help: LayerNorm-simple ≥ LayerNorm",
        "layernorm_simple",
        "layernorm",
        False,
        "metric",
        "Table 1",
    ),
    Claim(
        "ln_overfits",
        "Bias and gain overfit: LayerNorm's valid loss rises more after its minimum than "
        "LayerNorm-simple's",
        "layernorm",
        "layernorm_simple",
        True,
        "rise",
        "Enwiki8 figure",
    ),
    Claim(
        "derivatives_matter",
        "The derivatives of mean and variance matter: LayerNorm-simple > DetachNorm",
        "layernorm_simple",
        "detachnorm",
        True,
        "metric",
        "Table 2",
    ),
    Claim(
        "var_derivative_matters_more",
        "The variance derivative matters more than the mean's: "
        "Detach mean only > Detach variance only",
        "detach_mean",
        "detach_var",
        True,
        "metric",
        "poster text (papers.md §1.1)",
    ),
    # The paper claims AdaNorm *improves* on LayerNorm (abstract; better on 7 of 8 in Table 3), so strict.
    Claim(
        "adanorm_improves",
        "AdaNorm improves on LayerNorm: AdaNorm > LayerNorm",
        "adanorm",
        "layernorm",
        True,
        "metric",
        "Table 3",
    ),
]
SUPPORTS = {"better", "larger"}
# verdicts of rows that were not tested: they count neither for nor against a claim
UNTESTED = ("outside the regime", "no test", "too few runs", "did not train", "not learning")
AGAINST = {"worse", "smaller"}


@dataclass
class Finding:
    claim: Claim
    column: str
    unit: str = ""
    sentence: str = ""
    decided: str = (
        ""  # a verdict without a test: divergence, did not train, outside a regime, too few runs
    )
    n: int = 0  # seeds both norms completed: the pairs tested
    n_a: int = 0
    n_b: int = 0
    diff: Optional[float] = (
        None  # mean paired difference, in the claim's direction: positive = as claimed
    )
    sd: Optional[float] = None
    t: Optional[float] = None
    p: Optional[float] = None  # two-sided paired t-test
    ci90: Optional[tuple] = None
    margin: Optional[float] = None
    p_tost: Optional[float] = None
    paper: str = "–"
    # set by family.apply: adjusted over the declared family, and the MDE at its strictest level
    p_holm: Optional[float] = None
    p_bh: Optional[float] = None
    tost_holm: Optional[float] = None
    tost_bh: Optional[float] = None
    mde: Optional[float] = None
    notes: list = field(default_factory=list)

    def verdict(self, kind: str = "holm") -> str:
        """The verdict with the p-values of ``kind``: "raw", "holm" or "bh"."""
        if self.decided:
            return self.decided
        p, pt = {
            "raw": (self.p, self.p_tost),
            "holm": (self.p_holm, self.tost_holm),
            "bh": (self.p_bh, self.tost_bh),
        }[kind]
        alpha = settings()["alpha"]
        up, down = ("larger", "smaller") if self.claim.measure == "rise" else ("better", "worse")
        if p is not None and p < alpha:
            return up if self.diff > 0 else down
        if pt is not None and pt < alpha:
            return "equivalent"
        return "inconclusive"


def _values(cell: Cell, claim: Claim) -> dict[int, float]:
    """seed -> the measure, over the completed runs that have it."""
    if claim.measure == "metric":
        return {r.seed: r.value for r in cell.runs if r.value is not None}
    return {r.seed: v for r in cell.runs if (v := valid_rise(r)) is not None}


def _paper(claim: Claim, task: str) -> str:
    if claim.measure == "rise":
        return "shown (Enwiki8 figure)" if task == "enwik8" else "–"
    if not P.has_published(task):
        return "–"
    return P.improvement_text(task, claim.a, claim.b)


def evaluate(grid: Grid, claim: Claim, column: str) -> Optional[Finding]:
    """The finding for one claim on one column (unadjusted); None when either norm has no runs there."""
    A, B = grid.norm_cell(column, claim.a), grid.norm_cell(column, claim.b)
    if not A.runs or not B.runs:
        return None
    metric, hib = grid.metric(column)
    unit = metric if claim.measure == "metric" else "rise"
    sign = 1.0 if (claim.measure == "rise" or hib) else -1.0
    va, vb = _values(A, claim), _values(B, claim)
    la, lb = NORM_LABELS.get(claim.a, claim.a), NORM_LABELS.get(claim.b, claim.b)
    f = Finding(
        claim, column, unit, n_a=len(va), n_b=len(vb), paper=_paper(claim, column.split("@")[0])
    )
    div = "".join(
        f"; {lbl} diverged in {c.count('diverged')}/{c.n}"
        for lbl, c in ((la, A), (lb, B))
        if c.count("diverged")
    )
    first = (A.runs + B.runs)[0]
    if why := not_learning(first.task, first.scale):
        f.decided, f.sentence = "not learning", f"{first.task}: {why}: no test"
        return f
    untrained = [
        f"{lbl} did not train ({c.untrained})" for lbl, c in ((la, A), (lb, B)) if c.untrained
    ]
    if untrained:
        f.decided, f.sentence = "did not train", "; ".join(untrained) + ": no test"
        return f
    if claim.measure == "rise" and in_regime(grid, column) is False:
        f.decided, f.sentence = "outside the regime", regime_label(grid, column) + ": no test"
        return f
    if not va or not vb:
        if A.count("diverged") and not va and vb:
            f.decided, f.sentence = "worse", f"{la} diverged in every run, {lb} did not{div}"
        elif B.count("diverged") and not vb and va:
            f.decided, f.sentence = "better", f"{lb} diverged in every run, {la} did not{div}"
        else:
            f.decided, f.sentence = (
                "no test",
                f"no completed runs to compare (n = {len(va)}/{len(vb)}){div}",
            )
        return f
    seeds = sorted(set(va) & set(vb))
    unpaired = sorted(set(va) ^ set(vb))
    pr = S.paired([sign * va[s] for s in seeds], [sign * vb[s] for s in seeds], margin(unit))
    f.n, f.diff, f.sd, f.t, f.p, f.ci90, f.margin, f.p_tost = (
        pr.n,
        pr.diff,
        pr.sd,
        pr.t,
        pr.p,
        pr.ci90,
        pr.margin,
        pr.p_tost,
    )
    what = (
        f"{la} − {lb} = {fmt(f.diff, unit, signed=True)} {unit}"
        if claim.measure == "metric"
        else f"rise({la}) − rise({lb}) = {f.diff:+.2f} percentage points"
    )
    if claim.measure == "metric" and not hib and pr.n:
        what += " (sign flipped: positive = lower " + unit + ")"
    left = (
        f"; seed(s) {', '.join(map(str, unpaired))} left out: completed by one norm only"
        if unpaired
        else ""
    )
    if pr.n < 2:
        f.decided = "too few runs"
        f.sentence = (
            f"too few paired seeds for a test (n = {pr.n}); {what}{left}{div}"
            if pr.n
            else f"no seed completed by both norms{left}{div}"
        )
        if not pr.n:
            f.diff = None
        return f
    if pr.p is None:
        f.decided, f.sentence = (
            "no test",
            f"no spread of the per-seed differences, the t-test is undefined "
            f"(n = {pr.n}); {what}{left}{div}",
        )
        return f
    f.sentence = f"{what}; paired t = {f.t:.2f}, n = {pr.n} seeds{left}{div}"
    return f


def findings(grid: Grid) -> list[Finding]:
    """Every claim row of one grid, unadjusted (family.apply adjusts them)."""
    return [
        f
        for claim in CLAIMS
        for column in grid.columns
        if (f := evaluate(grid, claim, column)) is not None
    ]
