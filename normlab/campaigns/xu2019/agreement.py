"""Agreement with the paper: for every claim row whose two norms the paper published on the task
(Tables 1-3), the paper's difference beside ours, and whether they agree in sign.

"Agree" and "disagree" are verdicts, so they come from a test with its error controlled: our
difference's sign is decided by a two-sided t-test of the row's shown difference against 0 (paired
seeds; Welch where the seeds do not pair), its p multiplied by the looks at which the row could
have gained seeds (K, Bonferroni over the looks: a row that gained seeds until it resolved chose
its own n), then Holm over the table's rows at the protocol's alpha. A row whose sign the test
does not decide is "inconclusive"; a row where the paper prints the same number for both norms is
"paper tie" (its sign cannot agree or disagree, so it is no hypothesis of the Holm family; ours is
shown with its unadjusted p); a row with no test
(a cell that did not train, diverged runs, too few seeds) is "not compared", with the reason.

The paper's numbers are at its settings (full data, its models): the comparison is of the sign of
the effect, never of its size.
"""

from __future__ import annotations

from collections import Counter
from typing import NamedTuple, Optional

from ...report import hypotheses as H
from ...report import stats as S
from ...report.aggregate import fmt
from ...report.axis import task_of
from ...report.claim_cells import p_text
from ...report.tables import Table
from ...report.verdicts import Finding
from . import published as P

AGREE, DISAGREE, INCONCLUSIVE, TIE, NOT_COMPARED = (
    "agree",
    "disagree",
    "inconclusive",
    "paper tie",
    "not compared",
)
ORDER = (AGREE, DISAGREE, INCONCLUSIVE, TIE, NOT_COMPARED)


class Row(NamedTuple):
    finding: Finding
    paper: float  # the paper's difference, positive = as claimed
    p: Optional[float]  # two-sided, look-spent, before Holm (None: no test)
    p_holm: Optional[float]
    outcome: str  # one of ORDER
    why: str  # for "not compared": the row's reason


def paper_difference(f: Finding) -> Optional[float]:
    """The paper's published difference for the row's claim on its task, positive = as claimed;
    None where it published no such pair (a norm it did not run, a task it did not use, a loss
    measure, a diverged cell) or the column is a swept setting's, not the task's own."""
    task = task_of(f.column)
    if f.claim.measure != "metric" or f.column != task or not P.has_published(task):
        return None
    return P.published_improvement(task, f.claim.a, f.claim.b)


def two_sided_p(f: Finding, looks: int) -> Optional[float]:
    """The row's difference against 0, two-sided, times the ``looks`` it may have been read at."""
    if f.decided or f.stream is None:
        return None
    s = H.Stream(*f.stream)
    if s.se <= 0:
        return None
    p = 2.0 * float(min(H.above(s, 0.0), H.below(s, 0.0)))
    return min(1.0, looks * p)


def agreement(rows: list[Finding], alpha: float, looks: int) -> list[Row]:
    """Every row the paper has a difference for, in ``rows``' order, classified (module doc);
    ``looks``: the looks a family row may have gained seeds at (an exploratory row: one)."""
    mine = [(f, d) for f in rows if (d := paper_difference(f)) is not None]
    ps = [two_sided_p(f, looks if f.primary else 1) for f, _ in mine]
    # a paper tie's sign can neither agree nor disagree: it is no hypothesis of the family
    tested = [p for p, (_, paper) in zip(ps, mine) if p is not None and paper != 0]
    adjusted = iter(S.holm(tested) if tested else [])
    out = []
    for (f, paper), p in zip(mine, ps):
        p_holm = next(adjusted) if p is not None and paper != 0 else None
        why = "" if p is not None else f.decided or "no test"
        if paper == 0:
            outcome = TIE
        elif p_holm is None:
            outcome = NOT_COMPARED
        elif p_holm > alpha:
            outcome = INCONCLUSIVE
        else:
            outcome = AGREE if (f.stream[0] > 0) == (paper > 0) else DISAGREE
        out.append(Row(f, paper, p, p_holm, outcome, why))
    return out


def tally(rows: list[Row]) -> str:
    """One line: how many rows fall in each outcome, e.g. "agree 2, disagree 3, ... of 15"."""
    n = Counter(r.outcome for r in rows)
    return ", ".join(f"{k} {n[k]}" for k in ORDER if n[k]) + f" (of {len(rows)} comparisons)"


def ours_text(f: Finding) -> str:
    if f.diff is None:
        return "–"
    ci = f.ci90
    tail = f" [{fmt(ci[0], f.unit, True)}, {fmt(ci[1], f.unit, True)}]" if ci else ""
    return fmt(f.diff, f.unit, signed=True) + tail


def agreement_table(rows: list[Row], study: str, alpha: float, data: str = "") -> Table:
    t = Table(
        "paper_agreement",
        "Agreement with the paper: the published difference beside ours, per claim and task",
        [
            "study",
            "claim",
            "task",
            "paper (A − B)",
            "ours (A − B) [90% CI]",
            "n",
            "p (two-sided, × looks)",
            "p (Holm)",
            "outcome",
        ],
    )
    for r in rows:
        f = r.finding
        task = task_of(f.column)
        outcome = f"{r.outcome} ({r.why})" if r.why else r.outcome
        t.rows.append(
            [
                study,
                f.claim.text,
                f.column,
                P.signed_text(r.paper, P.METRICS[task][2]),
                ours_text(f),
                str(f.n) if f.n else "–",
                p_text(r.p),
                p_text(r.p_holm),
                outcome,
            ]
        )
    t.caption = (
        "Differences are signed as claimed (positive = A better; for bpc, lower is better, so the "
        "sign is flipped). The paper's are its Tables 1-3 at its settings (full datasets, its "
        f"models; {P.SOURCE}); ours at this study's. Only the sign is compared: ours is decided by "
        "a two-sided t-test of the difference against 0 (paired seeds; Welch where they do not "
        "pair), its p multiplied by the looks at which the row could gain seeds, then Holm over "
        f"this table's rows at alpha = {alpha:g}. agree / disagree: the adjusted test decides our "
        "sign, the same as / opposite to the paper's; inconclusive: it does not; paper tie: the "
        "paper prints the same score for both norms (no sign to agree with: outside the Holm "
        "family, its p unadjusted); not compared: the row has no test (the reason in brackets). "
        f"Tally: {tally(rows)}."
    )
    t.notes = [data] if data else []
    return t
