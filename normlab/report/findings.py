"""Does each claim of Xu et al. (2019) hold in our runs? One Welch t-test per claim and task.

A claim compares two norms, "A better than B" (or, for overfitting, "A's train/valid gap larger
than B's"). Over the seeds of one task we run one-sided Welch t-tests (scipy.stats.ttest_ind,
equal_var=False) in both directions and say plainly what they show:
- holds: A significantly better (p < alpha);
- contradicted: A significantly worse;
- consistent (for "A >= B" claims) or not shown (for "A > B" claims): no significant difference.
A norm that diverged in every run while the other completed decides the claim without a test.
p-values are per test and not corrected for multiple comparisons.
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Optional

from scipy import stats

from . import published as P
from .aggregate import NORM_LABELS, Cell, Grid, data_sentence, finite, fmt
from .runs import Run
from .tables import Table

ALPHA = 0.05


@dataclass(frozen=True)
class Claim:
    key: str
    text: str
    a: str
    b: str
    strict: bool        # "A > B" (must be shown) rather than "A >= B" (must not be refuted)
    measure: str        # "metric" (test metric) or "gap" (valid loss - train loss at the end)
    source: str


CLAIMS = [
    Claim("ln_simple_no_worse", "Bias and gain do not help: LayerNorm-simple ≥ LayerNorm", "layernorm_simple",
          "layernorm", False, "metric", "Table 1"),
    Claim("ln_overfits", "Bias and gain overfit: LayerNorm's valid−train loss gap > LayerNorm-simple's",
          "layernorm", "layernorm_simple", True, "gap", "Enwiki8 figure"),
    Claim("derivatives_matter", "The derivatives of mean and variance matter: LayerNorm-simple > DetachNorm",
          "layernorm_simple", "detachnorm", True, "metric", "Table 2"),
    Claim("var_derivative_matters_more", "The variance derivative matters more than the mean's: "
          "Detach mean only > Detach variance only", "detach_mean", "detach_var", True, "metric",
          "poster text (papers.md §1.1)"),
    Claim("adanorm_no_worse", "AdaNorm ≥ LayerNorm", "adanorm", "layernorm", False, "metric", "Table 3"),
]


def gap(run: Run) -> Optional[float]:
    """Valid loss at the last evaluation minus the mean train loss logged over the last 10% of
    steps before it. Train losses are measured with dropout on, the same way for every norm."""
    recs = [r for r in run.curves if finite(r.get("loss"))]
    valid = [r for r in recs if r.get("split") == "valid"]
    if not valid:
        return None
    s = valid[-1]["step"]
    train = [r for r in recs if r.get("split") == "train" and r["step"] <= s]
    if not train:
        return None
    window = [r["loss"] for r in train if r["step"] > 0.9 * s] or [train[-1]["loss"]]
    return valid[-1]["loss"] - statistics.fmean(window)


@dataclass
class Finding:
    claim: Claim
    column: str
    verdict: str
    sentence: str
    n_a: int = 0
    n_b: int = 0
    mean_a: Optional[float] = None
    mean_b: Optional[float] = None
    diff: Optional[float] = None        # in the claim's direction: positive = as claimed
    t: Optional[float] = None
    p: Optional[float] = None           # one-sided, in the claim's direction
    p_opposite: Optional[float] = None
    paper: str = "–"


def _values(cell: Cell, claim: Claim) -> list[float]:
    if claim.measure == "metric":
        return cell.values
    return [g for r in cell.runs if r.status == "completed" and (g := gap(r)) is not None]


def _paper(claim: Claim, task: str) -> str:
    if claim.measure == "gap":
        return "shown (Enwiki8 figure)" if task == "enwik8" else "–"
    if not P.has_published(task):
        return "–"
    return P.improvement_text(task, claim.a, claim.b)


def evaluate(grid: Grid, claim: Claim, column: str) -> Optional[Finding]:
    """The finding for one claim on one column; None when either norm has no runs there."""
    A, B = grid.norm_cell(column, claim.a), grid.norm_cell(column, claim.b)
    if not A.runs or not B.runs:
        return None
    metric, hib = grid.metric(column)
    unit = metric if claim.measure == "metric" else "loss"
    sign = 1.0 if (claim.measure == "gap" or hib) else -1.0
    va, vb = _values(A, claim), _values(B, claim)
    la, lb = NORM_LABELS.get(claim.a, claim.a), NORM_LABELS.get(claim.b, claim.b)
    f = Finding(claim, column, "no test", "", len(va), len(vb), paper=_paper(claim, column.split("@")[0]))
    div = "".join(f"; {lbl} diverged in {c.count('diverged')}/{c.n}" for lbl, c in ((la, A), (lb, B))
                  if c.count("diverged"))
    if not va or not vb:
        a_div, b_div = not va and A.count("diverged"), not vb and B.count("diverged")
        if b_div and va:
            f.verdict, f.sentence = "holds", f"{lb} diverged in every run, {la} did not{div}"
        elif a_div and vb:
            f.verdict, f.sentence = "contradicted", f"{la} diverged in every run, {lb} did not{div}"
        else:
            f.verdict, f.sentence = "no test", f"no completed runs to compare (n = {len(va)}/{len(vb)}){div}"
        return f
    f.mean_a, f.mean_b = statistics.fmean(va), statistics.fmean(vb)
    f.diff = sign * (f.mean_a - f.mean_b)
    what = (f"{la} − {lb} = {fmt(f.diff, unit, signed=True)} {unit}" if claim.measure == "metric"
            else f"gap({la}) − gap({lb}) = {fmt(f.diff, unit, signed=True)}")
    if claim.measure == "metric" and not hib:
        what += " (sign flipped: positive = lower " + unit + ")"
    n = f"n = {len(va)}/{len(vb)}"
    if len(va) < 2 or len(vb) < 2:
        f.verdict, f.sentence = "too few runs", f"too few runs for a test ({n}); {what}{div}"
        return f
    sa, sb = [sign * v for v in va], [sign * v for v in vb]
    if statistics.pstdev(sa) == 0 and statistics.pstdev(sb) == 0:
        f.verdict, f.sentence = "no test", f"no seed variance, the t-test is undefined ({n}); {what}{div}"
        return f
    res = stats.ttest_ind(sa, sb, equal_var=False, alternative="greater")
    f.t, f.p = float(res.statistic), float(res.pvalue)
    f.p_opposite = float(stats.ttest_ind(sa, sb, equal_var=False, alternative="less").pvalue)
    test = f"Welch t = {f.t:.2f}, one-sided p = {f.p:.3g}, {n}"
    if f.p < ALPHA:
        f.verdict = "holds"
    elif f.p_opposite < ALPHA:
        f.verdict, test = "contradicted", f"Welch t = {f.t:.2f}, one-sided p (opposite) = {f.p_opposite:.3g}, {n}"
    else:
        f.verdict = "not shown" if claim.strict else "consistent"
    explain = {"holds": "significant in the claimed direction",
               "contradicted": "significant in the opposite direction",
               "not shown": "no significant difference", "consistent": "no significant difference"}[f.verdict]
    f.sentence = f"{explain}: {what} ({test}){div}"
    return f


def findings(grid: Grid) -> list[Finding]:
    out = []
    for claim in CLAIMS:
        for column in grid.columns:
            f = evaluate(grid, claim, column)
            if f is not None:
                out.append(f)
    return out


METHOD = ("Method: for each claim and task, one-sided Welch t-tests over seeds (scipy.stats.ttest_ind, "
          f"equal_var=False), alpha = {ALPHA}, on the test metric of each run's best-valid checkpoint (gap: valid "
          "loss at the last evaluation minus the mean train loss of the last 10% of steps). 'holds' = significant "
          "in the claimed direction; 'contradicted' = significant in the opposite direction; 'consistent' (for ≥ "
          "claims) and 'not shown' (for > claims) = no significant difference: with 3 seeds only large effects "
          "can be detected, so this means within seed noise, not equal. p-values are not corrected for multiple "
          "comparisons: among k tests about k/20 are expected below 0.05 by chance alone. 'paper' = the "
          "published difference in the same direction (Tables 1-3).")


def findings_table(grid: Grid, fs: list[Finding]) -> Table:
    t = Table("findings", "Findings: do our runs support the paper's claims?",
              ["claim", "task", "verdict", "ours", "p (one-sided)", "n", "paper", "detail"])
    for f in fs:
        unit = grid.metric(f.column)[0] if f.claim.measure == "metric" else "loss"
        t.rows.append([f.claim.text, f.column, f.verdict, "–" if f.diff is None else fmt(f.diff, unit, signed=True),
                       "–" if f.p is None or math.isnan(f.p) else f"{f.p:.3g}", f"{f.n_a}/{f.n_b}", f.paper,
                       f.sentence])
    t.caption = METHOD
    t.notes = [data_sentence(grid, sorted({f.column for f in fs}, key=grid.columns.index))]
    return t


def summary_lines(fs: list[Finding]) -> list[str]:
    """One plain sentence per claim: on how many tasks it holds, is consistent, is contradicted."""
    lines = []
    for claim in CLAIMS:
        mine = [f for f in fs if f.claim is claim]
        if not mine:
            continue
        by: dict[str, list[str]] = {}
        for f in mine:
            by.setdefault(f.verdict, []).append(f.column)
        parts = [f"{v} on {len(cols)} ({', '.join(cols)})" for v, cols in sorted(by.items())]
        lines.append(f"- {claim.text} [{claim.source}]: " + "; ".join(parts) + ".")
    return lines
