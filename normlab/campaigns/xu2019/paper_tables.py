"""The paper's tables (and the beyond-the-paper one), built from a Grid, with the published numbers
beside ours.

TABLES is the one definition of which norms each table compares; normlab/configs/experiment/<key>.yaml
sweep exactly these norms (tests/test_reproduce.py checks that they agree).
"""

from __future__ import annotations

from typing import Optional

from ...report.aggregate import Grid
from ...report.run_tables import norm_table as _norm_table
from ...report.tables import Table
from . import published as P

TABLES: dict[str, tuple[str, list[str]]] = {
    "table1": ("Table 1: bias and gain", ["none", "layernorm", "layernorm_simple"]),
    "table2": (
        "Table 2: derivatives of the mean and variance",
        ["none", "detachnorm", "layernorm_simple", "detach_mean", "detach_var"],
    ),
    "table3": (
        "Table 3: AdaNorm",
        ["none", "layernorm", "layernorm_simple", "adanorm"],
    ),  # the paper's rows
    "beyond": (
        "Beyond the paper: RMSNorm and DyT beside LayerNorm",
        ["layernorm", "rmsnorm", "dyt"],
    ),
}
# The paper's Table 2 "Improvement" rows: (after which norm's row, better, worse).
IMPROVEMENTS = {
    "table2": [
        ("detachnorm", "detachnorm", "none"),
        ("layernorm_simple", "layernorm_simple", "detachnorm"),
    ]
}


class _Paper:
    """The published numbers (published.py) as the tables' reference columns."""

    label = "paper"
    note = (
        "'(paper)' columns: " + P.SOURCE + "; our scale and, where noted, our data differ, so "
        "compare the order of the rows, not the numbers."
    )
    has = staticmethod(P.has_published)
    text = staticmethod(P.published_text)
    improvement_text = staticmethod(P.improvement_text)


PAPER = _Paper()


def norm_table(grid: Grid, key: str, title: str, norms: Optional[list[str]]) -> Table:
    """One of the paper's tables: the rows of ``norms`` that have runs, the published numbers
    beside ours, and the Improvement rows whose two norms both have runs."""
    present = {n for _, (n, _) in grid.cells}
    rows = [n for n in norms if n in present] if norms is not None else None
    improvements = [i for i in IMPROVEMENTS.get(key, ()) if {i[1], i[2]} <= present]
    return _norm_table(grid, key, title, rows, PAPER, improvements)


def paper_tables(grid: Grid) -> list[Table]:
    """The tables with runs of at least two of their norms in ``grid`` (one row is no
    comparison); a norm without runs has no row (a row of "–" says nothing)."""
    present = {n for _, (n, _) in grid.cells}
    return [
        norm_table(grid, key, title, norms)
        for key, (title, norms) in TABLES.items()
        if len(present & set(norms)) >= 2
    ]
