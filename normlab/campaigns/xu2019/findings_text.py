"""The findings in words and as a table: verdicts after Holm, after BH and uncorrected, each row's
interval, margin and minimum detectable effect, and what the design can and cannot resolve."""

from __future__ import annotations

import math
from typing import Optional

from ...report.aggregate import Grid, data_sentence, fmt
from ...report.claims import margins_sentence, settings
from ...report.tables import Table
from .family import Family, family_sentence
from .findings import AGAINST, CLAIMS, SUPPORTS, UNTESTED, Finding


def _num(x: Optional[float], unit: str, signed: bool = False) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    return (
        f"{x:+.2f}"
        if unit == "rise" and signed
        else f"{x:.2f}"
        if unit == "rise"
        else fmt(x, unit, signed)
    )


def p_text(p: Optional[float]) -> str:
    return "–" if p is None or math.isnan(p) else f"{p:.3g}"


def method(fam: Family) -> str:
    a, power = settings()["alpha"], settings()["power"]
    return (
        f"Method: per claim and task, the two norms' runs paired by seed (a seed fixes the training subset, the "
        f"data order and the initialization of the parameters both norms have) and the per-seed differences "
        f"tested: a two-sided paired t-test (scipy.stats.ttest_rel) and a TOST equivalence test against the "
        f"metric's margin (statsmodels ttost_paired), alpha = {a}. Holm (family-wise error) and "
        f"Benjamini-Hochberg (false discovery rate) adjust all m = {fam.size} tests of the family table together "
        f"(every row's two tests, every claim's two-sided sign test across tasks). Verdict: 'better' / 'worse' "
        f"('larger' / 'smaller' for the valid-loss rise) = the difference test passes in / against the claimed "
        f"direction; 'equivalent' = TOST passes (the 90% CI lies within ±margin); 'inconclusive' = neither, which "
        f"says the runs cannot tell, not that there is no difference. 'ours' = mean per-seed difference in the "
        f"claim's direction (positive = as claimed) with its 90% CI; 'MDE' = the true difference the paired t-test "
        f"would detect with {power:.0%} power at alpha / m (Holm's strictest step), from the observed spread. "
        f"The overfitting claim is tested on the valid-loss rise after its minimum (overfitting table), in "
        f"percentage points; a task whose LayerNorm valid loss does not rise is outside the regime. "
        f"Cells first: a row where either norm 'did not train' (its mean test metric not clearly better "
        f"than the task's best trivial baseline; baselines table) or whose task is 'not learning' at "
        f"its scale (normlab/configs/study/claims.yaml) has no test and is not in the family. "
        f"{margins_sentence()} Test metric: each run's best-validation checkpoint. 'paper' = the published "
        f"difference in the same direction (Tables 1-3)."
    )


def findings_table(grid: Grid, fs: list[Finding], fam: Family, study: str = "this report") -> Table:
    t = Table(
        "findings",
        "Findings: do our runs support the paper's claims?",
        [
            "claim",
            "task",
            "verdict (Holm)",
            "verdict (BH)",
            "uncorrected",
            "n",
            "ours",
            "90% CI",
            "margin",
            "MDE",
            "p",
            "p Holm",
            "p BH",
            "p TOST",
            "TOST Holm",
            "paper",
            "detail",
        ],
    )
    for f in fs:
        ci = (
            "–"
            if f.ci90 is None
            else f"[{_num(f.ci90[0], f.unit, True)}, {_num(f.ci90[1], f.unit, True)}]"
        )
        t.rows.append(
            [
                f.claim.text,
                f.column,
                f.verdict("holm"),
                f.verdict("bh"),
                f.verdict("raw"),
                str(f.n),
                _num(f.diff, f.unit, True),
                ci,
                "–" if f.margin is None else f"±{f.margin:g}",
                _num(f.mde, f.unit),
                p_text(f.p),
                p_text(f.p_holm),
                p_text(f.p_bh),
                p_text(f.p_tost),
                p_text(f.tost_holm),
                f.paper,
                f.sentence,
            ]
        )
    t.caption = method(fam) + " " + family_sentence(fam)
    member = fam.member(study)
    if member and member.signs:
        text = {c.key: c.text.split(":")[0] for c in CLAIMS}
        t.caption += (
            " Across tasks (two-sided sign tests, adjusted in the family; sign_tests table): "
            + "; ".join(f"{text[k]}: {sign_sentence(r)}" for k, r in member.signs.items())
            + "."
        )
    t.notes = [data_sentence(grid, sorted({f.column for f in fs}, key=grid.columns.index))]
    return t


def _counts(mine: list[Finding], kind: str) -> str:
    by: dict[str, list[str]] = {}
    for f in mine:
        by.setdefault(f.verdict(kind), []).append(f.column)
    return "; ".join(
        f"{v} on {len(cols)} of {len(mine)} ({', '.join(cols)})" for v, cols in sorted(by.items())
    )


def resolution(mine: list[Finding]) -> str:
    """Which rows the design can resolve: MDE at most the margin (an effect of the margin's size
    would be detected with the stated power)."""
    rows = [f for f in mine if f.mde is not None and f.margin is not None]
    if not rows:
        return "no row has a minimum detectable effect (too few paired seeds)"
    ok = [f.column for f in rows if f.mde <= f.margin]
    mdes = ", ".join(f"{f.column} {_num(f.mde, f.unit)} (±{f.margin:g})" for f in rows)
    return (
        f"resolves a difference of its margin's size on {len(ok)} of {len(rows)} tasks"
        + (f" ({', '.join(ok)})" if ok else "")
        + f"; MDE (margin): {mdes}"
    )


def outcome(mine: list[Finding], strict: bool, kind: str = "holm") -> str:
    """The claim's standing in one clause: supported / refuted / unresolved task counts."""
    verdicts = [f.verdict(kind) for f in mine if f.verdict(kind) not in UNTESTED]
    support = sum(v in SUPPORTS or (not strict and v == "equivalent") for v in verdicts)
    against = sum(v in AGAINST or (strict and v == "equivalent") for v in verdicts)
    return (
        f"supported on {support}, refuted on {against}, unresolved on {len(verdicts) - support - against} "
        f"of {len(verdicts)} tested tasks"
    )


def sign_sentence(res: Optional[dict]) -> str:
    if not res or not res["n"]:
        return "sign test: no tasks with a mean difference"
    return (
        f"as claimed on {res['wins']} of {res['n']} tasks (sign test, two-sided p = {p_text(res['p'])}, "
        f"Holm {p_text(res.get('p_holm'))}, BH {p_text(res.get('p_bh'))})"
    )


def summary_lines(fs: list[Finding], fam: Family, study: str) -> list[str]:
    """One plain sentence per claim: its standing and verdict counts after Holm, BH and uncorrected,
    the sign test, and what the design can resolve."""
    member = fam.member(study)
    signs = member.signs if member else {}
    lines = []
    for claim in CLAIMS:
        mine = [f for f in fs if f.claim is claim]
        if not mine:
            continue
        lines.append(
            f"- {claim.text} [{claim.source}]: after Holm over the family's {fam.size} tests, "
            f"{outcome(mine, claim.strict)} ({_counts(mine, 'holm')}). After BH: {_counts(mine, 'bh')}. "
            f"Uncorrected: {_counts(mine, 'raw')}. Across tasks: {sign_sentence(signs.get(claim.key))}. "
            f"The design {resolution(mine)}."
        )
    return lines


def sign_table(fam: Family, data: str = "") -> Table:
    """Each member's sign test per claim: on how many tasks the mean difference went the claimed way."""
    text = {c.key: c.text for c in CLAIMS}
    t = Table(
        "sign_tests",
        "Across tasks: sign tests of every claim in the family",
        ["study", "claim", "as claimed", "tasks", "skipped", "p (two-sided)", "p Holm", "p BH"],
    )
    for m in fam.members:
        for key, res in m.signs.items():
            t.rows.append(
                [
                    m.study,
                    text[key],
                    str(res["wins"]),
                    str(res["n"]),
                    str(res.get("skipped", 0)),
                    p_text(res["p"]),
                    p_text(res.get("p_holm")),
                    p_text(res.get("p_bh")),
                ]
            )
    t.caption = (
        "Exact binomial sign test over tasks of each claim's mean per-seed difference (positive = as "
        "claimed; ties, rows decided by divergence, rows with a cell that did not train and tasks outside "
        "the overfitting or the learning regime are left out, "
        f"'skipped'), two-sided, adjusted with the rest of the family (m = {fam.size})."
    )
    t.notes = [data] if data else []
    return t
