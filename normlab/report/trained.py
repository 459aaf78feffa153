"""Cells first: did each cell (task x norm variant) train at all?

A cell whose mean test metric is not better than its task's best trivial baseline (the baselines
table: unigram and bigram bits per byte, copy-source BLEU, the majority class, the right-neighbour
parse) by more than the metric's margin (the protocol's ``trained_margin``) "did not train": its
numbers are shown with that label in every table and figure, and no claim test compares it, since
a difference between a model that learned and one at the unigram level says nothing about the
norms' effect on learning. Tasks declared outside the learning regime at a scale (the protocol's
``not_learning``) are named in every caption through the data sentence (aggregate.data_sentence).

Without baselines (no data files) nothing is gated, and the sentence says the check did not run.
"""

from __future__ import annotations

import math
from typing import Optional

from .aggregate import Cell, Grid, fmt
from .baselines import Provider, compute_all, level
from .protocol import Protocol


def best_baseline(rows: dict, hib: bool, split: str = "test") -> Optional[tuple[str, float]]:
    """(name, value) of the best trivial baseline on ``split``; None when there is none."""
    pts = [
        (r[split], name.split(" (")[0])
        for name, r in rows.items()
        if split in r and math.isfinite(r[split])
    ]
    if not pts:
        return None
    v, name = max(pts) if hib else min(pts)
    return name, v


def why_untrained(mean: float, metric: str, hib: bool, rows: dict, tol: float) -> str:
    """Why a cell with mean test metric ``mean`` did not train ("" when it trained): where the
    mean sits among the baselines, with the numbers. ``tol``: how much better than the best
    baseline a trained cell is (Protocol.trained_by)."""
    best = best_baseline(rows, hib)
    if best is None:
        return ""
    name, v = best
    if (mean - v if hib else v - mean) > tol:
        return ""
    where = level(mean, rows, hib, "test", tol) or f"not better than the {name} level"
    return f"{fmt(mean, metric)} {metric}: {where}; the {name} level is {fmt(v, metric)}"


def mark(cell: Cell, baselines: dict, protocol: Protocol) -> Cell:
    """Set ``cell.untrained`` from its task's ``baselines`` (compute_all's value for its column)."""
    cell.untrained = ""
    metric = cell.metric
    if cell.mean is not None and baselines.get("rows") and metric == baselines.get("metric"):
        hib = cell.runs[0].higher_is_better
        tol = protocol.trained_by(metric)
        cell.untrained = why_untrained(cell.mean, metric, hib, baselines["rows"], tol)
    return cell


def gate(grid: Grid, base: dict[str, dict]) -> Grid:
    """Mark every cell of ``grid`` that did not train (``Cell.untrained``: the reason), from
    ``base`` (column -> the task's baselines, baselines.compute_all)."""
    grid.gated = {c: "rows" in b and bool(b["rows"]) for c, b in base.items()}
    for (column, _), cell in grid.cells.items():
        mark(cell, base.get(column) or {}, grid.protocol)
    return grid


def gate_with(grid: Grid, provider: Optional[Provider]) -> Grid:
    """``gate`` with the baselines ``provider`` gives (None: nothing is gated)."""
    return gate(grid, compute_all(grid, provider)) if provider else grid


def untrained_cells(grid: Grid) -> list[tuple[str, tuple[str, str], str]]:
    """(column, variant, reason) of every cell that did not train, in table order."""
    return [
        (c, v, grid.cell(c, v).untrained)
        for c in grid.columns
        for v in grid.variants()
        if grid.cell(c, v).untrained
    ]


def untrained_sentence(grid: Grid) -> str:
    """One sentence naming the cells that did not train with their numbers, or saying none did;
    "" when no column had baselines to check against."""
    checked = [c for c, ok in getattr(grid, "gated", {}).items() if ok]
    if not checked:
        return ""
    cells = untrained_cells(grid)
    margins = sorted(
        {f"{grid.protocol.trained_by(grid.metric(c)[0]):g} {grid.metric(c)[0]}" for c in checked}
    )
    rule = (
        "a cell whose mean test metric is not better than its task's best trivial baseline by "
        f"more than {', '.join(margins)} ({grid.protocol.named}: trained_margin; "
        "baselines table)"
    )
    if not cells:
        return f"Every cell trained: none is at or below its task's trivial baselines ({rule})."
    named = "; ".join(f"{c}: {grid.label(v)} ({why})" for c, v, why in cells)
    return (
        f'Did not train ({rule}): {named}. These cells are labelled "did not train" in every '
        "table and figure and enter no claim test."
    )
