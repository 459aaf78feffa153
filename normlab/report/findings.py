"""Does each claim of Xu et al. (2019) hold in our runs? One Welch t-test per claim and task.

A claim compares two norms, "A better than B" (or, for overfitting, "A's train/valid gap larger
than B's"). Over the seeds of one task we run one-sided Welch t-tests (scipy.stats.ttest_ind,
equal_var=False) in both directions and say plainly what they show:
- holds: A significantly better (p < alpha);
- contradicted: A significantly worse;
- consistent (for "A >= B" claims) or not shown (for "A > B" claims): no significant difference.
A norm that diverged in every run while the other completed decides the claim without a test.
Claims are tested as the paper states them: improvement claims ("AdaNorm improves LayerNorm") are
strict, "no worse" claims (Table 1's "bias and gain do not help": papers.md §1.4 counts "no loss on
six") are ">=". Each row's deciding p is the one-sided p in the direction of the observed
difference; Holm and Benjamini-Hochberg adjust these over the whole table (stats.py), and a sign
test across tasks sits beside the per-task tests for each claim.
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Optional

from scipy import stats

from . import published as P
from . import stats as S
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
    # The paper claims AdaNorm *improves* on LayerNorm (abstract; better on 7 of 8 in Table 3), so strict.
    Claim("adanorm_improves", "AdaNorm improves on LayerNorm: AdaNorm > LayerNorm", "adanorm", "layernorm", True,
          "metric", "Table 3"),
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
    p_holm: Optional[float] = None      # adjusted over every tested row of the findings table
    p_bh: Optional[float] = None
    verdict_holm: str = ""
    verdict_bh: str = ""

    @property
    def p_decide(self) -> Optional[float]:
        """The one-sided p of the direction the data point to: the test that can make a verdict."""
        if self.p is None or self.p_opposite is None:
            return None
        return min(self.p, self.p_opposite)

    def adjusted(self, p_adj: Optional[float]) -> str:
        """The verdict after correction: a raw holds/contradicted stays only if p_adj < ALPHA."""
        if p_adj is None or self.verdict not in ("holds", "contradicted") or p_adj < ALPHA:
            return self.verdict
        return "not shown" if self.claim.strict else "consistent"


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
    holm, bh = S.adjust([f.p_decide for f in out])
    for f, ph, pb in zip(out, holm, bh):
        f.p_holm, f.p_bh = ph, pb
        f.verdict_holm, f.verdict_bh = f.adjusted(ph), f.adjusted(pb)
    return out


def sign_tests(fs: list[Finding]) -> dict[str, dict]:
    """Per claim: the sign test over tasks of the mean difference (positive = as claimed). Tasks
    decided by divergence (no means) are left out and counted in "skipped"."""
    out = {}
    for claim in CLAIMS:
        mine = [f for f in fs if f.claim is claim]
        if mine:
            res = S.sign_test([f.diff for f in mine if f.diff is not None])
            res["skipped"] = sum(f.diff is None for f in mine)
            out[claim.key] = res
    return out


def sign_sentence(res: dict, strict: bool) -> str:
    """What the sign test shows, in words: strict claims need p_greater, >= claims are refuted by p_less."""
    if not res["n"]:
        return "sign test: no tasks with a mean difference"
    head = f"better on {res['wins']} of {res['n']} tasks (sign test"
    if strict:
        tail = (f"one-sided p = {res['p_greater']:.3g} for 'better on more tasks than chance'; "
                f"p = {res['p_less']:.3g} for 'worse on more'")
    else:
        tail = f"p = {res['p_less']:.3g} for 'worse on more tasks than chance', which would refute ≥"
    return head + ", " + tail + ")"


METHOD = ("Method: for each claim and task, one-sided Welch t-tests over seeds (scipy.stats.ttest_ind, "
          f"equal_var=False), alpha = {ALPHA}, on the test metric of each run's best-valid checkpoint (gap: valid "
          "loss at the last evaluation minus the mean train loss of the last 10% of steps). 'holds' = significant "
          "in the claimed direction; 'contradicted' = significant in the opposite direction; 'consistent' (for ≥ "
          "claims) and 'not shown' (for > claims) = no significant difference: with 3 seeds only large effects "
          "can be detected, so this means within seed noise, not equal. 'p' is the one-sided p of the direction "
          "the data point to (claimed direction, or the opposite for 'contradicted'). Corrected for multiple "
          "comparisons over every tested row of this table: 'Holm' (family-wise error rate ≤ alpha) and 'BH' "
          "(Benjamini-Hochberg, false discovery rate ≤ alpha), each with the verdict that survives it; rows "
          "decided by divergence have no p and keep their verdict. Improvement claims (AdaNorm) are strict "
          "('>'); Table 1's claim is 'no worse' ('≥'). 'paper' = the published difference in the same direction "
          "(Tables 1-3).")


def findings_table(grid: Grid, fs: list[Finding]) -> Table:
    t = Table("findings", "Findings: do our runs support the paper's claims?",
              ["claim", "task", "verdict", "ours", "p (one-sided)", "p Holm", "verdict (Holm)", "p BH",
               "verdict (BH)", "n", "paper", "detail"])

    def p_text(p):
        return "–" if p is None or math.isnan(p) else f"{p:.3g}"
    for f in fs:
        unit = grid.metric(f.column)[0] if f.claim.measure == "metric" else "loss"
        t.rows.append([f.claim.text, f.column, f.verdict, "–" if f.diff is None else fmt(f.diff, unit, signed=True),
                       p_text(f.p_decide), p_text(f.p_holm), f.verdict_holm, p_text(f.p_bh), f.verdict_bh,
                       f"{f.n_a}/{f.n_b}", f.paper, f.sentence])
    t.caption = METHOD
    t.notes = [data_sentence(grid, sorted({f.column for f in fs}, key=grid.columns.index))]
    return t


def _counts(mine: list[Finding], attr: str) -> str:
    by: dict[str, list[str]] = {}
    for f in mine:
        by.setdefault(getattr(f, attr), []).append(f.column)
    return "; ".join(f"{v} on {len(cols)} of {len(mine)} ({', '.join(cols)})" for v, cols in sorted(by.items()))


def summary_lines(fs: list[Finding]) -> list[str]:
    """One plain sentence per claim: verdict counts raw, after Holm and after BH, and the sign test."""
    lines = []
    signs = sign_tests(fs)
    m = sum(f.p_decide is not None for f in fs)
    for claim in CLAIMS:
        mine = [f for f in fs if f.claim is claim]
        if not mine:
            continue
        lines.append(f"- {claim.text} [{claim.source}]: after Holm over all {m} tests, "
                     f"{_counts(mine, 'verdict_holm')}. After BH: {_counts(mine, 'verdict_bh')}. "
                     f"Uncorrected: {_counts(mine, 'verdict')}. Across tasks: "
                     f"{sign_sentence(signs[claim.key], claim.strict)}.")
    return lines
