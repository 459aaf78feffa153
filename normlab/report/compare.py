"""Every norm against a reference, and every value of a swept setting against its reference
value, per task: what a researcher comparing their own norms reads first.

Each comparison is a claim row of the report's engine (verdicts.py) in the superiority form, "A >
reference": the difference A − reference (paired by seed; Welch when no seed pairs), its 90% CI,
the tests, and a verdict (better, worse, negligible within the metric's margin, or unresolved;
verdicts.py), cells first (a cell that did not train is not compared). When the report tests no
claims (no ``--claims`` file and no campaign claim the runs can test), the comparisons are the
report's own family and Holm adjusts them; otherwise they are secondary, uncorrected and labelled
exploratory, and the claims are the family.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Optional, Sequence

from . import stats as S
from .aggregate import Cell, Grid, data_sentence, fmt
from .axis import axis_order, task_of, value_text
from .family import Family, apply, tested
from .tables import Table
from .verdicts import Claim, Finding, evaluate_cells, label

DEFAULT_REFERENCES = ("layernorm", "placement=post")


@dataclass
class Reference:
    norm: str = "layernorm"
    settings: tuple = ()  # (key, value text) pairs: the reference value of a swept setting

    @classmethod
    def parse(cls, items: Sequence[str] = DEFAULT_REFERENCES) -> Reference:
        """``["rmsnorm", "placement=pre"]``: a norm, and ``key=value`` for a swept setting."""
        norm, settings = "layernorm", {}
        for item in items:
            key, eq, value = item.partition("=")
            if eq:
                settings[key.strip()] = value.strip()
            else:
                norm = item.strip()
        return cls(norm, tuple(settings.items()))


def _claim(a: str, b: str) -> Claim:
    return Claim(key=f"{a} vs {b}", text=f"{a} vs {b}", a=a, b=b, form=S.SUPERIOR, measure="metric")


@dataclass
class Compared:
    """A family of comparison rows, with the two cells each row compared (for their mean ± std)."""

    family: Family
    cells: dict  # id(finding) -> (A's cell, the reference's cell)


def _base(grid: Grid, column: str, variants: list, ref: Reference):
    """The reference variant among one norm's ``variants`` in ``column``: the one whose setting
    holds the reference values (placement=post), else its default setting, else the first in
    natural order."""
    chosen = dict(ref.settings)

    def fits(v) -> bool:
        setting = json.loads(v[1])
        keys = [k for k in chosen if k in setting]
        return bool(keys) and all(value_text(setting[k]) == chosen[k] for k in keys)

    named = [v for v in variants if fits(v)]
    default = [v for v in variants if v[1] == "{}"]
    return (named or default or variants)[0]


def norm_rows(grid: Grid, ref: Reference) -> list[tuple[Finding, Cell, Cell]]:
    """Per column: each norm variant against the reference norm at the same setting (else at its
    reference setting); a setting swept over one norm against that norm's reference setting.
    Without runs of the reference norm in a column, each norm run at several settings is compared
    with its own reference setting there."""
    rows = []
    for column in grid.columns:
        ran = [v for v in grid.variants() if grid.cell(column, v).runs]
        own = {n: [v for v in ran if v[0] == n] for n in dict.fromkeys(v[0] for v in ran)}
        refs = {n: _base(grid, column, vs, ref) for n, vs in own.items()}
        for v in ran:
            if ref.norm in own:
                same = [u for u in own[ref.norm] if u[1] == v[1]]
                partner = refs[ref.norm] if v[0] == ref.norm or not same else same[0]
            else:
                partner = refs[v[0]]
            if partner == v:
                continue
            claim = _claim(grid.label(v), grid.label(partner))
            A, B = grid.cell(column, v), grid.cell(column, partner)
            rows.append(
                (evaluate_cells(claim, A, B, column, grid.metric(column), grid.protocol), A, B)
            )
    return rows


def _axis_cells(grid: Grid) -> dict:
    """(task column, variant, the other axis keys' values) -> {axis key: {value text: Cell}}."""
    out: dict = {}
    for (column, v), cell in grid.cells.items():
        setting = cell.runs[0].setting
        values = {k: value_text(setting.get(k)) for k in grid.axis}
        for k in grid.axis:
            rest = tuple((j, x) for j, x in values.items() if j != k)
            key = (grid.task_column(cell.runs[0]), v, rest)
            out.setdefault(key, {}).setdefault(k, {})[values[k]] = (column, cell)
    return out


def axis_rows(grid: Grid, ref: Reference) -> list[tuple[Finding, Cell, Cell]]:
    """Each value of a swept setting against the setting's reference value (``ref.settings``; else
    the first in its natural order, axis.axis_order), per task and norm variant."""
    rows = []
    chosen = dict(ref.settings)
    tasks = [task_of(c) for c in grid.columns]

    def where(item):  # tasks in the report's column order, then variants in row order
        (task_col, v, rest), _ = item
        return tasks.index(task_of(task_col)), grid.variants().index(v), str(rest)

    for (_, v, _), by_key in sorted(_axis_cells(grid).items(), key=where):
        for k, cells in by_key.items():
            order = axis_order(k, cells)
            base_value = chosen.get(k) if chosen.get(k) in cells else order[0]
            _, base = cells[base_value]
            for value in order:
                if value == base_value:
                    continue
                column, cell = cells[value]
                who = grid.label(v)
                claim = _claim(f"{who}, {k}={value}", f"{who}, {k}={base_value}")
                f = evaluate_cells(claim, cell, base, column, grid.metric(column), grid.protocol)
                rows.append((f, cell, base))
    return rows


def comparisons(grid: Grid, ref: Reference, primary: bool) -> Optional[Compared]:
    """The comparison rows of ``grid`` as a family (``primary``: Holm over them) or as secondary
    rows; None when there is nothing to compare (one norm and no swept setting)."""
    rows = norm_rows(grid, ref) + (axis_rows(grid, ref) if grid.axis else [])
    if not rows:
        return None
    fam = apply(
        "comparisons", [f for f, _, _ in rows], grid.protocol, primary=primary, declared=False
    )
    return Compared(fam, {id(f): (a, b) for f, a, b in rows})


def _raw(f: Finding, x: Optional[float], hib: bool) -> Optional[float]:
    """A difference in the claim's direction back in the metric's own sign (A − reference)."""
    return None if x is None else (x if hib or f.unit == "gap" else -x)


def _shown_p(f: Finding) -> Optional[float]:
    """The raw p of the test that decides the row's verdict as shown (after Holm in a family),
    else the smaller one-sided p."""
    h = f.deciding("holm" if f.primary else "raw")
    if h is not None:
        return h["p"]
    return min((h["p"] for h in f.hyps if h["cls"] != "negligible"), default=None)


def comparisons_table(grid: Grid, done: Compared, ref: Reference) -> Table:
    fam = done.family
    t = Table(
        "comparisons",
        f"Comparisons: each norm against {label(ref.norm)}"
        + (" and each value of the swept setting against its reference" if grid.axis else ""),
        [
            "task",
            "A",
            "reference",
            "pairs",
            "A: mean ± std (n)",
            "reference: mean ± std (n)",
            "A − reference",
            "90% CI",
            "p",
            "p Holm",
            "verdict",
        ],
    )
    for f in fam.rows:
        hib = grid.metric(f.column)[1]
        d, ci = _raw(f, f.diff, hib), f.ci90
        if ci is not None and not hib:
            ci = (-ci[1], -ci[0])
        A, B = done.cells[id(f)]
        t.rows.append(
            [
                f.column,
                f.claim.a,
                f.claim.b,
                f"0 ({f.n_a}/{f.n_b} unpaired)" if "unpaired" in f.notes else str(f.n),
                A.text(),
                B.text(),
                "–" if d is None else fmt(d, f.unit, signed=True),
                "–" if ci is None else f"[{fmt(ci[0], f.unit, True)}, {fmt(ci[1], f.unit, True)}]",
                _p(_shown_p(f)),
                _p(f.p_holm),
                f.shown(),
            ]
        )
    m = len(tested(fam.rows))
    family = (
        f"These comparisons are this report's family: Holm adjusts the {fam.size} hypotheses of "
        f"its {m} tested rows (no claims file was given and no campaign claim could be tested)."
        if fam.primary
        else "Secondary: the report's claims are its family, so these verdicts are uncorrected and "
        "exploratory."
    )
    t.caption = (
        "A − reference in the metric's own units (each task's metric; the verdict says which way is "
        "better), paired by seed: the runs of one seed share their data order and initialization; "
        "one-sided paired t-tests of the per-seed differences each way and an equivalence test "
        "(TOST) at ±margin (Welch where no seed pairs), 90% CI, 'pairs' the seeds both ran; 'p' "
        "the deciding test's (the smaller one-sided p while unresolved). Verdict: negligible when "
        "|A − reference| < margin is shown, else better / worse when A − reference > 0 / < 0 is, "
        "else unresolved; a cell that did not train "
        f"is not compared. {family} {grid.protocol.margins_sentence()}"
    )
    columns = list(dict.fromkeys(f.column for f in fam.rows))
    t.notes = [data_sentence(grid, columns)]
    return t


def _p(p: Optional[float]) -> str:
    return "–" if p is None else f"{p:.3g}"
