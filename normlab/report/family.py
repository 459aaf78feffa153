"""A family of claim rows and its correction: Holm over every hypothesis of the rows tested
together (each row's support, refutation and negligibility tests, report/hypotheses.py, each with
its look-spent p), each row's minimum detectable effect at the family's strictest level, and the
exploratory sign test of each claim across tasks. Which rows form the family is declared by the caller: a campaign's primary
study, a claims file the user gives the report, or the report's own comparisons."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Optional, Sequence

import numpy as np

from . import stats as S
from .axis import task_of, units
from .protocol import DEFAULT, Protocol
from .sequential import resolve_chance
from .verdicts import Finding


@dataclass
class Family:
    study: str  # the study whose rows these are ("this report" outside the declared folders)
    rows: list[Finding]
    primary: bool  # these rows are adjusted together (the primary family, or a report's own)
    declared: (
        bool  # a declared primary family (a campaign's or a claims file's), not a report's own
    )
    size: int = 0  # m: the hypotheses Holm adjusts over (0 for secondary rows)
    tested_rows: int = 0  # the rows those hypotheses belong to
    signs: dict = field(default_factory=dict)  # claim key -> exploratory sign test across tasks
    # when the declaration was made against the data, where a campaign can tell (its own type)
    when: Optional[object] = None
    protocol: Protocol = DEFAULT  # the one its rows were tested under (alpha, power, margins)


def tested(rows: Sequence[Finding]) -> list[Finding]:
    return [f for f in rows if not f.decided and f.hyps]


def _holm_p(h: dict) -> Optional[float]:
    return h.get("p_seq") if h.get("p_seq") is not None else h.get("p")


def sign_tests(fs: list[Finding], order: Sequence[str] = ()) -> dict[str, dict]:
    """Per claim (in the declared ``order`` of claim keys, then as the rows come): the two-sided
    sign test over tasks of the mean difference (positive = as claimed); rows without a
    difference (untested, divergence) are counted in "skipped"."""
    out = {}
    present = {f.claim.key for f in fs}
    for key in dict.fromkeys([k for k in order if k in present] + [f.claim.key for f in fs]):
        mine = [f for f in fs if f.claim.key == key]
        res = S.sign_test([f.diff for f in mine if f.diff is not None and not f.decided])
        res["skipped"] = sum(f.diff is None or bool(f.decided) for f in mine)
        # a study's axis makes a task several columns (enwik8 [placement=pre]): they share data,
        # so the test runs over columns, which are not independent tasks, and says so
        res["over"] = units(f.column for f in mine)
        out[key] = res
    return out


def apply(
    study: str,
    rows: list[Finding],
    protocol: Protocol,
    primary: bool,
    declared: bool,
    looks: Optional[Sequence[int]] = None,
    order: Sequence[str] = (),
) -> Family:
    """Adjust every hypothesis of ``rows`` by Holm when they are a family (``primary``), and set
    each tested row's MDE: at alpha / (m K) for a family (m: its hypotheses; K: the ``looks`` at
    which its rows may gain seeds), at alpha for a secondary row; one-sided, as the claim's own
    hypothesis is. A row the protocol declares exploratory (``Protocol.exploratory``) stays out of
    the family: uncorrected, at alpha, labelled so.
    ``order``: the claims' keys in their declared order, for the sign tests."""
    mine = tested(rows)
    out = {id(f) for f in mine if protocol.is_exploratory(f.claim.key, task_of(f.column))}
    family = [f for f in mine if id(f) not in out] if primary else []
    # a family's rows may gain seeds (its ``looks``): Holm over their look-spent p
    flat = [h for f in family for h in f.hyps]
    holm = dict(zip(map(id, flat), S.holm([_holm_p(h) for h in flat]) if flat else []))
    for f in mine:
        f.primary = primary and id(f) not in out
        for h in f.hyps:
            h["p_holm"] = holm.get(id(h))
        decided = f.deciding("holm") if f.primary else None
        f.p_holm = (decided or f.hyps[0]).get("p_holm") if f.primary else None
    size = len(flat)
    sizes = list(looks) if looks else [max((f.n for f in mine), default=0)]
    alpha = rows[0].alpha if rows else protocol.alpha
    level = alpha / (size * len(sizes)) if size else alpha
    for f in mine:
        sides = 1  # every hypothesis is one-sided (the support's, which the MDE is of)
        f.mde = S.mde(f.n, f.sd, level if f.primary else alpha, protocol.power, sides)
        if f.primary and looks:
            f.seeds_needed = S.seeds_to_resolve(f.sd, f.margin, level, sizes, sides, protocol.power)
    if primary and declared and looks and len(sizes) > 1:
        # the declared study's rows are the ones seeds are added to
        chances(family, sizes, alpha, protocol.futility)
    return Family(
        study,
        rows,
        primary,
        declared,
        size,
        tested_rows=len(family),
        signs=sign_tests(rows, order),
        protocol=protocol,
    )


def chances(
    mine: list[Finding], sizes: Sequence[int], alpha: float, floor: Optional[float]
) -> None:
    """Set each unresolved row's chance to resolve by the last look (sequential.resolve_chance, the
    family's other tested rows held at their p_seq; none once a row has the last look's seeds) and
    whether the declared futility rule (the protocol's ``futility``: ``floor``) stopped its seeds:
    its chance is below the floor, or it is a look behind the family's most-seeded row."""
    # a row's look is the seeds it ran, not those both norms completed: one whose norm diverged
    # on a look's seeds is neither behind nor short of the last look
    looked = [f.n_run or f.n for f in mine]
    open_ = [f.verdict("holm") == "unresolved" and k < sizes[-1] for f, k in zip(mine, looked)]
    if not any(open_) or floor is None:
        return
    streams = [
        [f.diff_train, f.diff] if f.claim.form == S.OVERFIT else [f.diff, math.nan] for f in mine
    ]
    sds = [[f.sd_train, f.sd] if f.claim.form == S.OVERFIT else [f.sd, math.nan] for f in mine]
    got = resolve_chance(
        [f.n for f in mine],
        np.array(streams, float),
        np.array(sds, float),
        [_holm_p(h) for f in mine for h in f.hyps],
        open_,
        [f.claim.form for f in mine],
        [f.margin if f.margin is not None else 0.0 for f in mine],
        sizes,
        alpha,
    )
    last, step = max(looked), sizes[1] - sizes[0]
    for f, c, o, k in zip(mine, got, open_, looked):
        f.resolve_chance = float(c) if o and c == c else None
        low = f.resolve_chance is not None and f.resolve_chance < floor
        f.stopped = o and (low or k + step <= last)
