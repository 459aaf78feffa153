"""The findings in words and as a table: each row's verdict (after Holm in the primary family,
uncorrected and exploratory elsewhere), its interval, margin and minimum detectable effect, and
what the design can and cannot resolve."""

from __future__ import annotations

from typing import Optional

from ...report.aggregate import Grid, data_sentence
from ...report.axis import COLUMNS
from ...report.axis import units as _units
from ...report.claim_cells import head, num, p_text
from ...report.tables import Table
from ...report.verdicts import NEGLIGIBLE, RULE
from .family import Family, family_sentence
from .findings import AGAINST, CLAIMS, SUPPORTS, UNTESTED, Finding, looks_of


def looks(fam: Family) -> list[int]:
    """The family's looks: its protocol's (a confirmatory study's declaration), else the campaign's."""
    return looks_of(fam.protocol)


def _seeds(f: Finding, last: int) -> str:
    """How many seeds the row's test needs to resolve an effect of the margin's size, by its MDE."""
    if not f.primary or f.decided or f.p is None:
        return "–"
    return f"> {last}" if f.seeds_needed is None else str(f.seeds_needed)


def _chance(f: Finding) -> str:
    """An unresolved primary row's chance to resolve by the last look; "stopped" below the floor."""
    if f.resolve_chance is None:
        return "–"
    return f"{f.resolve_chance:.2f}" + (" (stopped)" if f.stopped else "")


def method(fam: Family) -> str:
    """The caption in the NeurIPS checklist's terms: what varies between runs, the test and its
    assumption, what the ± and the CI are, n, alpha and m."""
    a, power = fam.protocol.alpha, fam.protocol.power
    return (
        "Method: per claim and task, the two norms' runs paired by seed; the seed is the source of "
        "variability (parameter initialization, data order and, where a task trains on a seeded "
        "subset, the subset), shared by both norms' runs of a seed. The tests are one-sided "
        "t-tests of the n per-seed differences (assumed independent across seeds and about normal). "
        f"{RULE} alpha = {a}. "
        "'ours' = mean per-seed difference in the claim's direction (positive = as claimed; the "
        "valid-loss difference for the overfitting claim, its train-loss one in 'detail'), '90% "
        "CI' its t interval (from the SD of the differences), 'r' the correlation of the two norms' "
        "values over seeds (what pairing gains), 'MDE' the true difference the row's test would "
        f"detect with {power:.0%} power at its strictest level (alpha / (m K) in the primary family; "
        "alpha for a secondary row), from the observed SD; 'seeds to resolve' the first look at "
        "which that MDE reaches the margin. Seeds may be added to unresolved primary rows in looks "
        f"of {', '.join(map(str, looks(fam)))} seeds (K = {len(looks(fam))}): 'p seq' = K x the "
        "smallest p of the looks made (Bonferroni spending, valid however the adding stops), for "
        "each hypothesis, which Holm adjusts; 'p' and 'p seq' are the claim's own hypothesis's, "
        "'p Holm' the deciding one's (the claim's own while unresolved). 'P(resolve)': an unresolved row's chance (in the declared primary family) "
        "to resolve by the last look if every such row kept gaining seeds, under the posterior "
        "predictive of its differences "
        "(mean and SD drawn from its seeds so far); a row below the declared futility floor "
        f"({fam.protocol.futility}) gains no more seeds and stays unresolved "
        "('stopped', as is a row a look behind the family's most-seeded one); the rule only "
        "withholds seeds, so the error rate holds. "
        "The overfitting claim's train loss is the mean of the last 10% of steps before the "
        "evaluation, both losses at the last evaluation both runs have, the same step for both "
        "norms. "
        f"{fam.protocol.margins_sentence()} Test metric: each run's best-validation checkpoint. 'paper' = the "
        "published difference in the same direction (Tables 1-3)."
    )


def findings_table(grid: Grid, fs: list[Finding], fam: Family, study: str = "this report") -> Table:
    t = Table(
        "findings",
        "Findings: do our runs support the paper's claims?",
        [
            "claim",
            "task",
            "form",
            "verdict",
            "uncorrected",
            "n",
            "ours",
            "90% CI",
            "margin",
            "r",
            "MDE",
            "seeds to resolve",
            "P(resolve)",
            "p",
            "p seq",
            "p Holm",
            "paper",
            "detail",
        ],
    )
    for f in fs:
        t.rows.append(
            [
                *head(f),
                "–" if f.corr is None else f"{f.corr:+.2f}",
                num(f.mde, f.unit),
                _seeds(f, looks(fam)[-1]),
                _chance(f),
                p_text(f.p),
                p_text(f.p_seq if f.primary else None),
                p_text(f.p_holm),
                f.paper,
                f.sentence,
            ]
        )
    t.caption = method(fam) + " " + family_sentence(fam)
    if fam.signs:
        text = {c.key: c.text.split(":")[0] for c in CLAIMS}
        t.caption += (
            f" Across {across(fam)} (two-sided sign tests, exploratory; sign_tests table): "
            + "; ".join(f"{text[k]}: {sign_sentence(r)}" for k, r in fam.signs.items())
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


def resolves(f) -> Optional[bool]:
    """Whether a row's test detects, with the stated power, the effect the claim is about: a
    difference of the margin's size for superiority, no difference at all (0 against −margin) for
    non-inferiority. None without an MDE."""
    if f.mde is None or f.margin is None:
        return None
    return f.mde <= f.margin


def units(mine: list) -> str:
    """What a claim's rows are: tasks, or the columns a study's axis makes of them."""
    return _units(f.column for f in mine)


def resolution(mine: list[Finding]) -> str:
    rows = [f for f in mine if resolves(f) is not None]
    if not rows:
        return "no row has a minimum detectable effect (too few paired seeds)"
    ok = [f.column for f in rows if resolves(f)]
    mdes = ", ".join(f"{f.column} {num(f.mde, f.unit)} (±{f.margin:g})" for f in rows)
    return (
        f"resolves an effect of its margin's size on {len(ok)} of {len(rows)} {units(rows)}"
        + (f" ({', '.join(ok)})" if ok else "")
        + f"; MDE (margin): {mdes}"
    )


def outcome(mine: list, kind: str = "holm") -> str:
    """The claim's standing in one clause: supported / refuted / negligible / unresolved task
    counts (the verdicts already carry the claim's form)."""
    verdicts = [v for f in mine if (v := f.verdict(kind)) not in UNTESTED]
    if not verdicts:
        return f"no tested {units(mine)[:-1]} ({len(mine)} untested)"
    support = sum(v.split(" (")[0] in SUPPORTS for v in verdicts)
    against = sum(v.split(" (")[0] in AGAINST for v in verdicts)
    equal = sum(v.split(" (")[0] == NEGLIGIBLE for v in verdicts)
    return (
        f"supported on {support}, refuted on {against}, negligible on {equal}, unresolved on "
        f"{len(verdicts) - support - against - equal} of {len(verdicts)} tested {units(mine)}"
    )


def _stopped(mine: list[Finding], floor: Optional[float], last: int) -> str:
    """The claim's rows the futility rule stops, in one sentence ("" when none)."""
    cols = [f"{f.column} ({f.resolve_chance:.2f})" for f in mine if f.stopped]
    if not cols:
        return ""
    return (
        f" Unresolved with no more seeds (futility: chance to resolve by {last} seeds "
        f"below {floor}): {', '.join(cols)}."
    )


def sign_sentence(res: Optional[dict]) -> str:
    over = (res or {}).get("over", "tasks")
    if not res or not res["n"]:
        return f"sign test: no {over} with a mean difference"
    return (
        f"as claimed on {res['wins']} of {res['n']} {over} (sign test, two-sided p = "
        f"{p_text(res['p'])}, exploratory)"
    )


def across(fam: Family) -> str:
    """The sign tests' unit: tasks, or the columns a study's axis makes of its tasks."""
    return COLUMNS if any(r.get("over") == COLUMNS for r in fam.signs.values()) else "tasks"


def summary_lines(fs: list[Finding], fam: Family, study: str) -> list[str]:
    """One plain sentence per claim: its standing, verdict counts, the sign test across tasks, and
    what the design can resolve."""
    lines = []
    how = (
        f"after Holm over the primary family's {fam.size} tests"
        if fam.primary and fam.declared
        else f"after Holm over this report's {fam.size} tests"
        if fam.primary
        else "uncorrected, exploratory (a secondary study)"
    )
    for claim in CLAIMS:
        mine = [f for f in fs if f.claim is claim]
        if not mine:
            continue
        lines.append(
            f"- {claim.text} [the paper's {claim.source}]: {how}, {outcome(mine)} ({_counts(mine, 'holm')}). "
            f"Uncorrected: {_counts(mine, 'raw')}. Across {across(fam)}: "
            f"{sign_sentence(fam.signs.get(claim.key))}. The design {resolution(mine)}."
            + _stopped(mine, fam.protocol.futility, looks(fam)[-1])
        )
    return lines


def sign_table(fam: Family, data: str = "") -> Table:
    """Per claim: on how many tasks (or a study's task × setting columns) the mean difference went
    the claimed way (exploratory)."""
    text = {c.key: c.text for c in CLAIMS}
    t = Table(
        "sign_tests",
        f"Across {across(fam)}: sign tests of every claim (exploratory)",
        ["study", "claim", "as claimed", "n", "over", "skipped", "p (two-sided)"],
    )
    for key, res in fam.signs.items():
        t.rows.append(
            [
                fam.study,
                text[key],
                str(res["wins"]),
                str(res["n"]),
                res.get("over", "tasks"),
                str(res.get("skipped", 0)),
                p_text(res["p"]),
            ]
        )
    t.caption = (
        f"Exact binomial sign test over {across(fam)} of each claim's mean per-seed difference "
        "(positive = as claimed; ties and untested rows are left out, 'skipped'), two-sided."
        + (
            " A task at each setting of the study's axis is a column of its own: the columns of "
            "one task share its data, so they are not independent units as tasks are."
            if across(fam) == COLUMNS
            else ""
        )
        + " Secondary: not in the primary family, not adjusted, exploratory."
    )
    t.notes = [data] if data else []
    return t
