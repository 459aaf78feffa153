"""One test per claim row, the engine every comparison of the report goes through.

A claim compares two cells of a report's grid: two norms in one column (task), or one norm at two
values of a swept setting (placement=pre against placement=post). Each row pairs the two cells'
runs by seed (the runs of one seed share their training subset, data order and the initialization
of the parameters both have) and tests the per-seed differences, signed so that positive is as
claimed. Each row has one hypothesis per way it can be decided (report/hypotheses.py), and its
verdict is the first class whose hypothesis is rejected, in this order:
- *negligible* (every form with an equivalence test): the effect lies within ±margin (TOST);
- supported: "A ≥ B" (non-inferiority) *non-inferior*, A − B > −margin; "A > B" (superiority)
  *better* (*larger* for a generalization gap), A − B > 0; "A overfits more than B" *overfits*,
  A's train loss lower and its valid loss higher at the same step (both, an intersection-union
  test: fitting faster alone never supports it);
- refuted: *inferior* (A − B < −margin), *worse* / *smaller* (A − B < 0), *does not overfit*
  (A's valid loss lower, or its train loss higher);
- else *unresolved*.
A row's p-values are corrected with its family's (family.py: Holm over every hypothesis of every
tested row), so no verdict word is read from a raw CI. Runs whose seeds do not pair (two cells run
with different seeds) are compared unpaired (Welch), and the row says so. Cells first: a row where
either cell did not train (report.trained), or whose task is declared outside the learning regime
at its scale (the protocol's ``not_learning``), has no test. A cell that diverged in every run while
the other completed decides the row without a test.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Optional, Sequence

import numpy as np

from . import hypotheses as H
from . import stats as S
from .aggregate import NORM_LABELS, Cell, Grid, fmt
from .axis import task_of
from .overfit import gap_at_step, last_valid_step, losses_at_step
from .protocol import Protocol


@dataclass(frozen=True)
class Claim:
    key: str
    text: str
    a: str
    b: str
    # stats.NONINFERIOR ("A ≥ B"), stats.SUPERIOR ("A > B") or stats.OVERFIT ("A overfits more
    # than B": lower train loss and higher valid loss at the same step)
    form: str
    # "metric" (test metric), "gap" (generalization gap at a common step, nats) or "loss" (train
    # and valid loss at a common step, nats: the overfitting form's)
    measure: str
    source: str = ""
    # a claims file's own: its margin, else its file's per measure (margins: (measure, value)
    # pairs), else the report's protocol's; its alpha (else the protocol's); the tasks it is
    # tested on (empty: every task both ran)
    margin: Optional[float] = None
    alpha: Optional[float] = None
    tasks: tuple = ()
    margins: tuple = ()

    def margin_of(self, unit: Optional[str], protocol: Protocol) -> Optional[float]:
        if self.margin is not None:
            return self.margin
        own = dict(self.margins).get(unit or "")
        return own if own is not None else protocol.margin(unit)

    def level(self, protocol: Protocol) -> float:
        return self.alpha if self.alpha is not None else protocol.alpha


SUPPORTS = {"better", "larger", "non-inferior", "overfits"}
AGAINST = {"worse", "smaller", "inferior", "does not overfit"}
NEGLIGIBLE = "negligible"
# how a row is decided, in the words of every findings caption
RULE = (
    "Each row has one hypothesis per way it can be decided, every one in the family's Holm "
    "correction: 'A ≥ B' (non-inferiority) non-inferior when A − B > −margin is shown, inferior "
    "when A − B < −margin is; 'A > B' (superiority) better (larger, for a gap) when A − B > 0, "
    "worse (smaller) when A − B < 0, negligible when |A − B| < margin (TOST); 'A overfits more "
    "than B' overfits when A's train loss is lower and its valid loss higher at the last "
    "evaluation both runs have (both one-sided tests reject: fitting faster alone never supports "
    "it), does not overfit when A's valid loss is lower or its train loss higher, negligible when "
    "the valid losses differ by less than the margin. A row reads the first class rejected in the "
    "order negligible, supported, refuted (a significant effect inside ±margin reads negligible), "
    "else unresolved; no verdict is read from a raw CI."
)
# each form's hypotheses (hypotheses.row), in the words of a row's sentence
TESTS = {
    S.NONINFERIOR: "t-tests one-sided against −margin, each way",
    S.SUPERIOR: "t-tests one-sided against 0, each way, and TOST at ±margin",
    S.OVERFIT: "an intersection-union test (train loss lower and valid loss higher, one-sided "
    "t-tests), each loss's opposite, and TOST at ±margin on the valid loss",
}
# verdicts of rows that were not tested: they count neither for nor against a claim
UNTESTED = ("no test", "too few runs", "did not train", "not learning")


@dataclass
class Finding:
    claim: Claim
    column: str
    unit: str = ""
    alpha: float = 0.05  # the claim's level (its own, else the protocol's)
    sentence: str = ""
    # a verdict without a test: divergence, did not train, not learning, too few runs
    decided: str = ""
    n: int = 0  # seeds both norms completed: the pairs tested
    n_run: int = 0  # seeds either norm ran, diverged or failed included: the row's look
    n_a: int = 0
    n_b: int = 0
    # mean paired difference, in the claim's direction: positive = as claimed (for the
    # overfitting form, the valid-loss difference; diff_train the train-loss one)
    diff: Optional[float] = None
    sd: Optional[float] = None
    t: Optional[float] = None
    # the claim's own hypothesis (supported when rejected) on every paired seed, its look-spent
    # p, and after family.apply the Holm p of the hypothesis that decided the row (the claim's own
    # while unresolved)
    p: Optional[float] = None
    p_seq: Optional[float] = None  # valid under adding seeds: K x the smallest p of the looks made
    ci90: Optional[tuple] = None
    # the shown difference's (mean, standard error, df) on the seeds tested: its sign's own test
    stream: Optional[tuple] = field(default=None, compare=False)
    margin: Optional[float] = None
    paper: str = "–"
    corr: Optional[float] = None  # between-norm correlation of the paired values over seeds
    diff_train: Optional[float] = None
    sd_train: Optional[float] = None
    # every hypothesis of the row (hypotheses.row): {"cls", "what", "p", "p_seq", "p_holm"}
    hyps: list = field(default_factory=list)
    # set by family.apply: Holm over the primary family (None: a secondary row), and the MDE at its
    # strictest level (alpha / (m K); alpha for a secondary row)
    primary: bool = False
    p_holm: Optional[float] = None
    mde: Optional[float] = None
    seeds_needed: Optional[int] = None  # the first look whose MDE is at most the margin
    # set by family.apply: the chance to resolve by the last look; stopped by the futility rule
    resolve_chance: Optional[float] = None
    stopped: bool = False
    notes: list = field(default_factory=list)

    def _p(self, h: dict, kind: str) -> Optional[float]:
        return h.get("p_holm") if kind == "holm" and h.get("p_holm") is not None else h.get("p")

    def deciding(self, kind: str = "holm") -> Optional[dict]:
        """The hypothesis whose rejection decides the row (hypotheses.PRECEDENCE), else None."""
        for cls in H.PRECEDENCE:
            for h in self.hyps:
                p = self._p(h, kind)
                if h["cls"] == cls and p is not None and p < self.alpha:
                    return h
        return None

    def verdict(self, kind: str = "holm") -> str:
        """The verdict with the family's Holm p ("holm"; a secondary row has none and uses its own)
        or the uncorrected one ("raw")."""
        if self.decided:
            return self.decided
        h = self.deciding(kind)
        if h is None:
            return "unresolved"
        if h["cls"] == H.NEGLIGIBLE:
            return NEGLIGIBLE
        words = {
            S.NONINFERIOR: ("non-inferior", "inferior"),
            S.OVERFIT: ("overfits", "does not overfit"),
        }.get(
            self.claim.form,
            ("larger", "smaller") if self.claim.measure == "gap" else ("better", "worse"),
        )
        return words[0] if h["cls"] == H.SUPPORT else words[1]

    def shown(self) -> str:
        """The verdict as the tables print it: a secondary row's is labelled exploratory."""
        v = self.verdict("holm")
        return v if self.primary or v in UNTESTED or self.decided else f"{v} (exploratory)"


def _values(cell: Cell, claim: Claim, steps: Optional[dict] = None) -> dict[int, tuple]:
    """seed -> the measure's streams, over the completed runs that have it: (test metric,), (gap at
    ``steps[seed]``,), or (−train loss, valid loss) at ``steps[seed]`` for the overfitting form (so
    that A − B is positive as claimed in each: A's train loss lower, its valid loss higher)."""
    if claim.measure == "metric":
        return {seed: (v,) for seed, v in cell.by_seed.items()}
    steps = steps or {}
    get = gap_at_step if claim.measure == "gap" else losses_at_step
    out = {}
    for r in cell.runs:
        if r.status == "completed" and (v := get(r, steps.get(r.seed))) is not None:
            out[r.seed] = (v,) if claim.measure == "gap" else (-v[0], v[1])
    return out


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


def machine_of(run) -> Optional[tuple]:
    """(CPU model, instruction set) a run recorded; None for runs that predate the record."""
    m = run.summary.get("machine") or {}
    return (m.get("cpu"), m.get("isa")) if m else None


def crossed_machines(A: Cell, B: Cell, seeds: Sequence[int]) -> list[int]:
    """The paired seeds whose two runs recorded different machines."""
    ma, mb = ({r.seed: machine_of(r) for r in c.runs} for c in (A, B))
    return [s for s in seeds if ma.get(s) and mb.get(s) and ma[s] != mb[s]]


def evaluate_cells(
    claim: Claim,
    A: Cell,
    B: Cell,
    column: str,
    metric_of: tuple[Optional[str], bool],
    protocol: Protocol,
    looks: Optional[Sequence[int]] = None,
    paper: str = "–",
) -> Optional[Finding]:
    """The finding for ``claim`` on cells ``A`` (its a) and ``B`` (its b) of ``column``, before any
    family's correction; None when either has no runs. ``protocol``: the margins, alpha and the
    tasks outside the learning regime; ``looks``: the seed counts at which rows may gain seeds (a
    sequential family's): each hypothesis's p_seq then holds under optional stopping; None: the
    seeds are fixed."""
    if not A.runs or not B.runs:
        return None
    metric, hib = metric_of
    unit = {"metric": metric, "gap": "gap", "loss": "loss"}[claim.measure]
    sign = 1.0 if (claim.measure != "metric" or hib) else -1.0
    steps = common_steps(A, B) if claim.measure != "metric" else None
    va, vb = _values(A, claim, steps), _values(B, claim, steps)
    la, lb = label(claim.a), label(claim.b)
    f = Finding(claim, column, unit, claim.level(protocol), n_a=len(va), n_b=len(vb), paper=paper)
    div = "".join(
        f"; {lbl} diverged in {c.count('diverged')}/{c.n}"
        for lbl, c in ((la, A), (lb, B))
        if c.count("diverged")
    )
    first = (A.runs + B.runs)[0]
    if why := protocol.outside(first.task, first.scale):
        f.decided, f.sentence = "not learning", f"{first.task}: {why}: no test"
        return f
    untrained = [
        f"{lbl} did not train ({c.untrained})" for lbl, c in ((la, A), (lb, B)) if c.untrained
    ]
    if untrained:
        f.decided, f.sentence = "did not train", "; ".join(untrained) + ": no test"
        return f
    if not va or not vb:
        against, for_ = {
            S.NONINFERIOR: ("inferior", "non-inferior"),
            S.OVERFIT: ("does not overfit", "overfits"),
        }.get(claim.form, ("worse", "better"))
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
    f.margin = claim.margin_of(unit, protocol)
    n_streams = H.streams_of(claim.form)
    seeds = sorted(set(va) & set(vb))
    if len(seeds) < 2 and len(va) >= 2 and len(vb) >= 2:
        return _unpaired(f, va, vb, sign, div, protocol)
    unpaired = sorted(set(va) ^ set(vb))
    # one list of per-seed differences per stream; the last is the one shown (the valid loss's)
    d = [[sign * (va[s][c] - vb[s][c]) for s in seeds] for c in range(n_streams)]
    shown = S.SUPERIOR if claim.form == S.OVERFIT else claim.form
    row = S.by_form(d[-1], shown, f.margin)
    f.n, f.diff, f.sd, f.t, f.ci90 = row.n, row.diff, row.sd, row.t, row.ci90
    f.corr = S.correlation([sign * va[s][-1] for s in seeds], [sign * vb[s][-1] for s in seeds])
    if n_streams == 2 and row.n:
        f.diff_train = float(np.mean(d[0]))
        f.sd_train = float(np.std(d[0], ddof=1)) if row.n >= 2 else None
    streams = [H.paired_stream(col) for col in d]
    if row.n >= 2 and all(st is not None for st in streams) and f.margin is not None:
        f.hyps = H.hypotheses_of(claim.form, f.margin, streams)
        f.p = f.hyps[0]["p"]  # the claim's own hypothesis
        f.stream = tuple(float(x) for x in streams[-1])
        if looks is not None:
            # the looks: the seeds both norms ran, in the order they were added, a seed one norm
            # did not complete included; a seed only one norm ran (added for another row of its
            # own) is no look of this row
            ran_a, ran_b = ({r.seed for r in c.runs if r.seed is not None} for c in (A, B))
            run = sorted(ran_a & ran_b)
            f.n_run = len(run)
            ranks = [run.index(s) for s in seeds]
            H.look_spent(f.hyps, claim.form, f.margin, d, ranks, len(run), looks)
            f.p_seq = f.hyps[0]["p_seq"]
    if claim.form == S.OVERFIT:
        what = (
            f"train loss({lb}) − train loss({la}) = {f.diff_train:+.4f}, valid loss({la}) − "
            f"valid loss({lb}) = {f.diff:+.4f} nats at the last common evaluation"
            if row.n
            else ""
        )
    elif claim.measure == "metric":
        what = f"{la} − {lb} = {fmt(f.diff, unit, signed=True)} {unit}"
        if not hib and row.n:
            what += " (sign flipped: positive = lower " + unit + ")"
    else:
        what = f"gap({la}) − gap({lb}) = {f.diff:+.3f} nats at the last common evaluation"
    left = (
        f"; seed(s) {', '.join(map(str, unpaired))} left out: completed by one norm only"
        if unpaired
        else ""
    )
    if crossed := crossed_machines(A, B, seeds):
        f.notes.append("machines crossed")
        left += (
            f"; seed(s) {', '.join(map(str, crossed))} paired runs of two machines (CPU or "
            "instruction set differs): their difference includes the machines'"
        )
    if row.n < 2:
        f.decided = "too few runs"
        f.sentence = (
            f"too few paired seeds for a test (n = {row.n}); {what}{left}{div}"
            if row.n
            else f"no seed completed by both norms{left}{div}"
        )
        if not row.n:
            f.diff = f.diff_train = None
        return f
    if f.margin is None:
        f.decided, f.sentence = "no test", f"{no_margin(unit, protocol)}; {what}{left}{div}"
        return f
    if not f.hyps:
        f.decided, f.sentence = (
            "no test",
            f"no spread of the per-seed differences, the t-test is undefined "
            f"(n = {row.n}); {what}{left}{div}",
        )
        return f
    f.sentence = f"{what}; {TESTS[claim.form]} on paired seeds, n = {row.n} seeds{left}{div}"
    return f


def no_margin(unit: str, protocol: Protocol) -> str:
    """Why a row has no test when no margin is declared for its measure."""
    return (
        f"no margin is declared for {unit} ({protocol.named}): the estimate and its 90% CI only, "
        "no verdict (a protocol with margins: normlab-report --protocol FILE)"
    )


def _unpaired(f: Finding, va: dict, vb: dict, sign: float, div: str, protocol: Protocol) -> Finding:
    """Two cells whose seeds do not pair: Welch's tests of the two samples (signed as claimed)."""
    n_streams = H.streams_of(f.claim.form)
    xa = [[sign * v[c] for v in va.values()] for c in range(n_streams)]
    xb = [[sign * v[c] for v in vb.values()] for c in range(n_streams)]
    shown = S.SUPERIOR if f.claim.form == S.OVERFIT else f.claim.form
    row = S.welch_by_form(xa[-1], xb[-1], shown, f.margin)
    f.n, f.diff, f.sd, f.t, f.ci90 = row.n, row.diff, row.sd, row.t, row.ci90
    streams = [H.welch_stream(a, b) for a, b in zip(xa, xb)]
    if f.margin is None:
        f.decided, f.sentence = "no test", f"{no_margin(f.unit, protocol)}; unpaired{div}"
        return f
    if any(st is None for st in streams):
        f.decided = "no test"
        f.sentence = f"no spread in either norm's runs, Welch's test is undefined{div}"
        return f
    f.hyps = H.hypotheses_of(f.claim.form, f.margin, streams)
    f.p = f.hyps[0]["p"]
    f.stream = tuple(float(x) for x in streams[-1])
    if n_streams == 2:
        f.diff_train = float(streams[0].mean)
    f.sentence = (
        f"{label(f.claim.a)} − {label(f.claim.b)} = {fmt(f.diff, f.unit, signed=True)} {f.unit}; "
        f"unpaired (no seed run by both): Welch {TESTS[f.claim.form]}, "
        f"n = {len(xa[-1])}/{len(xb[-1])}{div}"
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
    return evaluate_cells(
        claim, A, B, column, grid.metric(column), grid.protocol, looks, paper(claim, column)
    )


def claim_rows(grid: Grid, claims: Sequence[Claim], **kw) -> list[Finding]:
    """Every claim's row in every column of ``grid`` where both its norms ran, claim by claim."""
    return [
        f
        for claim in claims
        for column in grid.columns
        if (f := evaluate(grid, claim, column, **kw)) is not None
    ]
