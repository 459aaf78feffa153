"""The claims of a claims file (``normlab-report --claims FILE``; claimfile.py) tested on a
report's runs as its primary family: one row per claim and task where both norms ran, one test
per row by the claim's form (verdicts.py), Holm over the tested rows (family.py)."""

from __future__ import annotations

from .aggregate import Grid, data_sentence
from .claim_cells import head, num, p_text
from .claimfile import ClaimSet
from .family import Family, apply, tested
from .findings import Findings
from .protocol import Protocol
from .tables import Table
from .verdicts import AGAINST, RULE, SUPPORTS, UNTESTED, Finding, claim_rows, label


def method(cs: ClaimSet, fam: Family, protocol: Protocol) -> str:
    alpha = cs.alpha if cs.alpha is not None else protocol.alpha
    return (
        f"Method: the claims of {cs.path} are this report's primary family: {fam.tested_rows} "
        f"tested row(s), one per claim and task, their {fam.size} hypotheses adjusted together by "
        "Holm; the comparisons table is secondary (exploratory). Each row pairs the two norms' "
        "runs by seed (Welch where no seed pairs) and tests the per-seed differences, signed so "
        f"that positive is as claimed. {RULE} A gap claim compares the generalization gap (valid "
        "loss minus the recent train loss) at the last evaluation both "
        f"runs have. alpha = {alpha:g}; MDE at alpha / m with {protocol.power:.0%} power. "
        f"Margins: each claim's own, else its file's, else: {protocol.margins_sentence()}"
    )


def claims_table(grid: Grid, cs: ClaimSet, fam: Family) -> Table:
    t = Table(
        "claims",
        f"Claims of {cs.name}: do the runs support them?",
        ["claim", "task", "form", "verdict", "uncorrected", "n", "A − B (as claimed)", "90% CI"]
        + ["margin", "MDE", "p", "p Holm", "detail"],
    )
    for f in fam.rows:
        t.rows.append([*head(f), num(f.mde, f.unit), p_text(f.p), p_text(f.p_holm), f.sentence])
    t.caption = method(cs, fam, grid.protocol)
    t.notes = [s for s in (_missing(grid, cs, fam.rows), data_sentence(grid)) if s]
    return t


def _missing(grid: Grid, cs: ClaimSet, rows: list[Finding]) -> str:
    """The sentence naming the claims no task could test (a norm never run), or ""."""
    present = {n for _, (n, _) in grid.cells}
    gone = [c for c in cs.claims if not any(f.claim is c for f in rows)]
    if not gone:
        return ""
    why = [
        f"'{c.text}' ("
        + (", ".join(f"{n}: no runs" for n in (c.a, c.b) if n not in present) or "no task has both")
        + ")"
        for c in gone
    ]
    return "Not tested, nothing to compare: " + "; ".join(why) + "."


def _line(cs_rows: list[Finding]) -> str:
    by: dict[str, list[str]] = {}
    for f in cs_rows:
        by.setdefault(f.shown(), []).append(f.column)
    return "; ".join(f"{v} on {', '.join(cols)}" for v, cols in by.items())


def user_findings(grid: Grid, cs: ClaimSet) -> tuple[Findings, Family]:
    """The findings of ``cs`` on ``grid``: the claims table and one index line per claim."""
    rows = claim_rows(grid, cs.claims)
    fam = apply(
        cs.name, rows, grid.protocol, primary=True, declared=True, order=[c.key for c in cs.claims]
    )
    lines = []
    for c in cs.claims:
        mine = [f for f in rows if f.claim is c]
        if not mine:
            lines.append(
                f"- {c.text}: not tested (no task ran both {label(c.a)} and {label(c.b)})."
            )
            continue
        sup = sum(f.verdict() in SUPPORTS for f in mine)
        against = sum(f.verdict() in AGAINST for f in mine)
        untested = sum(f.verdict() in UNTESTED for f in mine)
        lines.append(
            f"- {c.text}: supported on {sup}, against on {against}, untested on {untested} of "
            f"{len(mine)} task(s) ({_line(mine)})."
        )
    n = len(tested(rows))
    lines.append(
        f"- Primary family: the {n} tested row(s) of {cs.path}, their {fam.size} hypotheses "
        "Holm-adjusted together."
    )
    return Findings([claims_table(grid, cs, fam)], lines, method(cs, fam, grid.protocol)), fam
