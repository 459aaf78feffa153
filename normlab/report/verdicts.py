"""One test per claim row, the engine every comparison of the report goes through.

A claim compares two cells of a report's grid: two norms in one column (task), or one norm at two
values of a swept setting (placement=pre against placement=post). Each row pairs the two cells'
runs by seed (the runs of one seed share their training subset, data order and the initialization
of the parameters both have) and tests the per-seed differences, signed so that positive is as
claimed, with one test chosen by the claim's form (stats.by_form):
- "A ≥ B" (non-inferiority): one-sided, H0: the difference is at most -margin. *non-inferior* when
  it is rejected; *inferior* only when the 90% CI lies wholly below -margin; else *unresolved*.
- "A > B" (superiority): two-sided. *better* / *worse* when it rejects in / against the claimed
  direction (*larger* / *smaller* for the generalization gap); *equivalent* when it does not and
  the 90% CI lies within ±margin (reported as such, never counted as refuted); else *unresolved*.
Runs whose seeds do not pair (two cells run with different seeds) are compared unpaired (Welch),
and the row says so. Cells first: a row where either cell did not train (report.trained), or whose
task is declared outside the learning regime at its scale (claims.yaml ``not_learning``), has no
test. A cell that diverged in every run while the other completed decides the row without a test.
Which rows form a family, and its Holm correction, is family.py's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Optional, Sequence

from . import stats as S
from .aggregate import NORM_LABELS, Cell, Grid, fmt
from .axis import task_of
from .claims import margin as declared_margin
from .claims import not_learning, settings
from .overfit import gap_at_step, last_valid_step


@dataclass(frozen=True)
class Claim:
    key: str
    text: str
    a: str
    b: str
    form: str  # stats.NONINFERIOR ("A ≥ B") or stats.SUPERIOR ("A > B")
    measure: str  # "metric" (test metric) or "gap" (generalization gap at a common step, nats)
    source: str = ""
    # a claims file's own: its margin, else its file's per measure (margins: (measure, value)
    # pairs), else claims.yaml's; its alpha; the tasks it is tested on (empty: every task both ran)
    margin: Optional[float] = None
    alpha: Optional[float] = None
    tasks: tuple = ()
    margins: tuple = ()

    @property
    def strict(self) -> bool:
        return self.form == S.SUPERIOR

    def margin_of(self, unit: Optional[str]) -> Optional[float]:
        if self.margin is not None:
            return self.margin
        own = dict(self.margins).get(unit or "")
        return own if own is not None else declared_margin(unit)

    @property
    def level(self) -> float:
        return self.alpha if self.alpha is not None else settings()["alpha"]


SUPPORTS = {"better", "larger", "non-inferior"}
AGAINST = {"worse", "smaller", "inferior"}
# verdicts of rows that were not tested: they count neither for nor against a claim
UNTESTED = ("no test", "too few runs", "did not train", "not learning")


@dataclass
class Finding:
    claim: Claim
    column: str
    unit: str = ""
    sentence: str = ""
    # a verdict without a test: divergence, did not train, not learning, too few runs
    decided: str = ""
    n: int = 0  # seeds both norms completed: the pairs tested
    n_run: int = 0  # seeds either norm ran, diverged or failed included: the row's look
    n_a: int = 0
    n_b: int = 0
    # mean paired difference, in the claim's direction: positive = as claimed
    diff: Optional[float] = None
    sd: Optional[float] = None
    t: Optional[float] = None
    p: Optional[float] = None  # the row's test (by the claim's form) on every paired seed
    p_seq: Optional[float] = None  # valid under adding seeds: K x the smallest p of the looks made
    ci90: Optional[tuple] = None
    margin: Optional[float] = None
    paper: str = "–"
    corr: Optional[float] = None  # between-norm correlation of the paired values over seeds
    # set by family.apply: Holm over the primary family (None: a secondary row), and the MDE at its
    # strictest level (alpha / m; alpha for a secondary row)
    primary: bool = False
    p_holm: Optional[float] = None  # Holm over the primary rows' p_seq
    mde: Optional[float] = None
    seeds_needed: Optional[int] = None  # the first look whose MDE is at most the margin
    # set by family.apply: the chance to resolve by the last look; stopped by the futility rule
    resolve_chance: Optional[float] = None
    stopped: bool = False
    notes: list = field(default_factory=list)

    def verdict(self, kind: str = "holm") -> str:
        """The verdict with Holm's p ("holm"; a secondary row has none and uses its own) or the
        uncorrected one ("raw")."""
        if self.decided:
            return self.decided
        p = self.p_holm if kind == "holm" and self.p_holm is not None else self.p
        alpha = self.claim.level
        if self.claim.form == S.NONINFERIOR:
            if p is not None and p < alpha:
                return "non-inferior"
            if self.ci90 is not None and self.margin is not None and self.ci90[1] < -self.margin:
                return "inferior"
            return "unresolved"
        up, down = ("larger", "smaller") if self.claim.measure == "gap" else ("better", "worse")
        if p is not None and p < alpha:
            return up if self.diff > 0 else down
        ci, m = self.ci90, self.margin
        if ci is not None and m is not None and -m < ci[0] and ci[1] < m:
            return "equivalent"
        return "unresolved"

    def shown(self) -> str:
        """The verdict as the tables print it: a secondary row's is labelled exploratory."""
        v = self.verdict("holm")
        return v if self.primary or v in UNTESTED or self.decided else f"{v} (exploratory)"


def _values(cell: Cell, claim: Claim, steps: Optional[dict] = None) -> dict[int, float]:
    """seed -> the measure, over the completed runs that have it; the gap at ``steps[seed]``."""
    if claim.measure == "metric":
        return cell.by_seed
    steps = steps or {}
    return {
        r.seed: v
        for r in cell.runs
        if r.status == "completed" and (v := gap_at_step(r, steps.get(r.seed))) is not None
    }


def common_steps(A: Cell, B: Cell) -> dict[int, int]:
    """seed -> the last evaluation step both cells' completed runs of that seed have."""
    last = {}
    for cell in (A, B):
        for r in cell.runs:
            if r.status == "completed" and (s := last_valid_step(r)) is not None:
                last.setdefault(r.seed, []).append(s)
    return {seed: min(v) for seed, v in last.items() if len(v) == 2}


def label(name: str) -> str:
    """A norm's label, or a setting's ``key=value`` as it is."""
    return NORM_LABELS.get(name, name)


def evaluate_cells(
    claim: Claim,
    A: Cell,
    B: Cell,
    column: str,
    metric_of: tuple[Optional[str], bool],
    looks: Optional[Sequence[int]] = None,
    paper: str = "–",
) -> Optional[Finding]:
    """The finding for ``claim`` on cells ``A`` (its a) and ``B`` (its b) of ``column``, before any
    family's correction; None when either has no runs. ``looks``: the seed counts at which rows
    may gain seeds (claims.yaml ``sequential``): the row's p_seq then holds under optional
    stopping; None: the seeds are fixed."""
    if not A.runs or not B.runs:
        return None
    metric, hib = metric_of
    unit = metric if claim.measure == "metric" else "gap"
    sign = 1.0 if (claim.measure == "gap" or hib) else -1.0
    steps = common_steps(A, B) if claim.measure == "gap" else None
    va, vb = _values(A, claim, steps), _values(B, claim, steps)
    la, lb = label(claim.a), label(claim.b)
    f = Finding(claim, column, unit, n_a=len(va), n_b=len(vb), paper=paper)
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
    if not va or not vb:
        against, for_ = ("inferior", "non-inferior") if not claim.strict else ("worse", "better")
        if A.count("diverged") and not va and vb:
            f.decided, f.sentence = against, f"{la} diverged in every run, {lb} did not{div}"
        elif B.count("diverged") and not vb and va:
            f.decided, f.sentence = for_, f"{lb} diverged in every run, {la} did not{div}"
        else:
            f.decided, f.sentence = (
                "no test",
                f"no completed runs to compare (n = {len(va)}/{len(vb)}){div}",
            )
        return f
    f.margin = claim.margin_of(unit)
    seeds = sorted(set(va) & set(vb))
    if len(seeds) < 2 and len(va) >= 2 and len(vb) >= 2:
        return _unpaired(f, [sign * v for v in va.values()], [sign * v for v in vb.values()], div)
    unpaired = sorted(set(va) ^ set(vb))
    xa, xb = [sign * va[s] for s in seeds], [sign * vb[s] for s in seeds]
    d = [x - y for x, y in zip(xa, xb)]
    row = S.by_form(d, claim.form, f.margin)
    f.n, f.diff, f.sd, f.t, f.p, f.ci90 = row.n, row.diff, row.sd, row.t, row.p, row.ci90
    f.corr = S.correlation(xa, xb)
    if looks is not None:
        # the looks: the seeds both norms ran, in the order they were added, a seed one norm did
        # not complete included; a seed only one norm ran (added for another row of its own) is
        # no look of this row
        ran_a, ran_b = ({r.seed for r in c.runs if r.seed is not None} for c in (A, B))
        run = sorted(ran_a & ran_b)
        f.n_run = len(run)
        f.p_seq = S.sequential_p(
            d, claim.form, f.margin, looks, [run.index(s) for s in seeds], len(run)
        )
    what = (
        f"{la} − {lb} = {fmt(f.diff, unit, signed=True)} {unit}"
        if claim.measure == "metric"
        else f"gap({la}) − gap({lb}) = {f.diff:+.3f} nats at the last common evaluation"
    )
    if claim.measure == "metric" and not hib and row.n:
        what += " (sign flipped: positive = lower " + unit + ")"
    left = (
        f"; seed(s) {', '.join(map(str, unpaired))} left out: completed by one norm only"
        if unpaired
        else ""
    )
    if row.n < 2:
        f.decided = "too few runs"
        f.sentence = (
            f"too few paired seeds for a test (n = {row.n}); {what}{left}{div}"
            if row.n
            else f"no seed completed by both norms{left}{div}"
        )
        if not row.n:
            f.diff = None
        return f
    if row.p is None:
        f.decided, f.sentence = (
            "no test",
            f"no spread of the per-seed differences, the t-test is undefined "
            f"(n = {row.n}); {what}{left}{div}",
        )
        return f
    test = "one-sided against −margin" if claim.form == S.NONINFERIOR else "two-sided"
    f.sentence = f"{what}; paired t = {f.t:.2f} ({test}), n = {row.n} seeds{left}{div}"
    return f


def _unpaired(f: Finding, xa: list[float], xb: list[float], div: str) -> Finding:
    """Two cells whose seeds do not pair: Welch's test of the two samples (signed as claimed)."""
    row = S.welch_by_form(xa, xb, f.claim.form, f.margin)
    f.n, f.diff, f.sd, f.t, f.p, f.ci90 = row.n, row.diff, row.sd, row.t, row.p, row.ci90
    test = "one-sided against −margin" if f.claim.form == S.NONINFERIOR else "two-sided"
    if row.p is None:
        f.decided = "no test"
        f.sentence = f"no spread in either norm's runs, Welch's test is undefined{div}"
        return f
    f.sentence = (
        f"{label(f.claim.a)} − {label(f.claim.b)} = {fmt(f.diff, f.unit, signed=True)} {f.unit}; "
        f"unpaired (no seed run by both): Welch t = {f.t:.2f} ({test}), n = {len(xa)}/{len(xb)}{div}"
    )
    f.notes.append("unpaired")
    return f


def evaluate(
    grid: Grid,
    claim: Claim,
    column: str,
    looks: Optional[Sequence[int]] = None,
    paper: Callable[[Claim, str], str] = lambda c, t: "–",
) -> Optional[Finding]:
    """The finding for a claim between two norms in one column (unadjusted); None when either norm
    has no runs there or the claim names other tasks. ``paper(claim, column)``: what a campaign
    shows beside the row (its published difference)."""
    if claim.tasks and task_of(column) not in claim.tasks:
        return None
    A, B = grid.norm_cell(column, claim.a), grid.norm_cell(column, claim.b)
    return evaluate_cells(claim, A, B, column, grid.metric(column), looks, paper(claim, column))


def claim_rows(grid: Grid, claims: Sequence[Claim], **kw) -> list[Finding]:
    """Every claim's row in every column of ``grid`` where both its norms ran, claim by claim."""
    return [
        f
        for claim in claims
        for column in grid.columns
        if (f := evaluate(grid, claim, column, **kw)) is not None
    ]
