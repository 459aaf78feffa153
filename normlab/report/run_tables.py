"""The tables of runs, built from a Grid: task x norm (the summary, or a chosen set of norms with
rows of differences and a column of reference numbers beside each of ours), the data and model
of each task, and every run."""

from __future__ import annotations

import json
import os
import statistics
from typing import Optional, Protocol, Sequence

from ..schema import default
from .aggregate import NORM_LABELS, Grid, data_sentence, fmt
from .data_notes import data_note
from .tables import Table

WHAT = (
    "Test {metric} of the checkpoint with the best validation score; mean ± sample std over seeds "
    "(n = completed runs). Diverge (k/n): k of n runs stopped with a non-finite training loss or one "
    "above task.train.diverge_loss; they are never averaged in."
)
MIXED_NOTE = "† the cell's runs differ in config beyond the seed."


class Reference(Protocol):
    """Published numbers shown beside ours, a "(reference)" column after each task that has them."""

    label: str  # the column header: "<task> (<label>)"
    note: str  # the table's note on where they come from

    def has(self, task: str) -> bool: ...

    def text(self, task: str, norm: str) -> str: ...

    def improvement_text(self, task: str, better: str, worse: str) -> str: ...


def _header(grid: Grid, column: str) -> str:
    metric, hib = grid.metric(column)
    return f"{column} {metric or '?'}{'↑' if hib else '↓'}"


def _common_notes(grid: Grid, columns: list[str], ref: Optional[Reference]) -> list[str]:
    metrics = sorted({m for m in (grid.metric(c)[0] for c in columns) if m})
    notes = [WHAT.format(metric="/".join(metrics) or "metric"), data_sentence(grid, columns)]
    if ref and any(ref.has(c.split("@")[0]) for c in columns):
        notes.append(ref.note)
    if any(grid.cell(c, v).mixed for c in columns for v in grid.variants()):
        notes.append(MIXED_NOTE)
    return notes


def improvement(grid: Grid, column: str, better: str, worse: str) -> Optional[tuple[float, int]]:
    """Our Improvement cell: mean(better) - mean(worse) over the seeds both completed, and how
    many; sign-flipped where lower is better. Over each cell's own seeds the row would set the
    seeds one norm alone has (added to its unresolved rows) against nothing."""
    a, b = (grid.norm_cell(column, n).by_seed for n in (better, worse))
    seeds = [s for s in a if s is not None and s in b]
    if not seeds:
        return None
    d = statistics.fmean(a[s] for s in seeds) - statistics.fmean(b[s] for s in seeds)
    return (d if grid.metric(column)[1] else -d), len(seeds)


def norm_table(
    grid: Grid,
    key: str,
    title: str,
    norms: Optional[list[str]],
    ref: Optional[Reference] = None,
    improvements: Sequence[tuple[str, str, str]] = (),
) -> Table:
    """A row per variant of ``norms`` (None: every norm), a column per task; ``ref``: published
    numbers beside ours; ``improvements``: (after which norm's row, better, worse) rows of the
    difference of means, positive when ``better`` is better."""
    columns = grid.columns
    header = ["norm"]
    best = {}
    for c in columns:
        best[len(header)] = grid.metric(c)[
            1
        ]  # only our columns are ranked; the paper's are for reference
        header.append(_header(grid, c))
        if ref and ref.has(c.split("@")[0]):
            header.append(f"{c} ({ref.label})")
    t = Table(key, title, header, best=best)
    after = {a: (b, w) for a, b, w in improvements}
    for variant in grid.variants(norms):
        row = [grid.label(variant)]
        for c in columns:
            row.append(grid.cell(c, variant).text())
            if ref and ref.has(c.split("@")[0]):
                row.append(ref.text(c.split("@")[0], variant[0]))
        t.rows.append(row)
        if variant[0] in after and variant == grid.variants([variant[0]])[-1]:
            better, worse = after[variant[0]]
            t.unranked.add(len(t.rows))
            t.rows.append(_improvement_row(grid, columns, better, worse, ref))
    t.notes = _common_notes(grid, columns, ref)
    if after:
        t.notes.insert(
            1,
            "Improvement rows: difference of the two norms' means over the seeds both completed "
            "(n), positive = the first-named variant is better (sign flipped for BPC), as in the "
            "paper's Table 2; none where either cell did not train.",
        )
    return t


def _improvement_row(
    grid: Grid, columns: list[str], better: str, worse: str, ref: Optional[Reference]
) -> list[str]:
    row = [f"Improvement ({NORM_LABELS.get(better, better)} − {NORM_LABELS.get(worse, worse)})"]
    for c in columns:
        row.append(_improvement_text(grid, c, better, worse))
        task = c.split("@")[0]
        if ref and ref.has(task):
            row.append(ref.improvement_text(task, better, worse))
    return row


def _improvement_text(grid: Grid, column: str, better: str, worse: str) -> str:
    if any(grid.norm_cell(column, n).untrained for n in (better, worse)):
        return "– (did not train)"  # a cell that did not train is compared with nothing
    found = improvement(grid, column, better, worse)
    if found is None:
        return "–"
    d, n = found
    return f"{fmt(d, grid.metric(column)[0], signed=True)} ({n})"


def summary_table(grid: Grid) -> Table:
    """The task x norm table over every run given: every norm present, no paper columns."""
    return norm_table(grid, "summary", "All runs: task × norm", None)


def data_table(grid: Grid) -> Table:
    """Per task: the data used (from the summaries), model size, steps and wall time."""
    t = Table(
        "data",
        "Data, model size, steps and wall time per task",
        [
            "task",
            "data",
            "runs",
            "params",
            "steps (mean)",
            "wall time per run (mean)",
            "wall time (total)",
            "throughput (mean)",
        ],
    )
    for c in grid.columns:
        runs = [r for r in grid.column_runs(c) if r.summary]
        params = sorted({r.summary["params"] for r in runs if "params" in r.summary})
        steps = [r.summary["steps"] for r in runs if "steps" in r.summary]
        walls = [r.summary["wall_time_s"] for r in runs if "wall_time_s" in r.summary]
        tput = [(k, v) for r in runs for k, v in (r.summary.get("throughput") or {}).items()]
        counts = {
            s: sum(r.status == s for r in grid.column_runs(c))
            for s in ("completed", "diverged", "failed", "incomplete")
        }
        t.rows.append(
            [
                c,
                data_note(grid.column_runs(c)),
                ", ".join(f"{v} {k}" for k, v in counts.items() if v),
                (f"{params[0]:,}" if len(params) == 1 else f"{params[0]:,}–{params[-1]:,}")
                if params
                else "–",
                f"{statistics.fmean(steps):,.0f}" if steps else "–",
                f"{statistics.fmean(walls):,.1f} s" if walls else "–",
                f"{sum(walls) / 3600:,.2f} h" if walls else "–",
                (
                    f"{statistics.fmean(v for _, v in tput):,.0f} {tput[0][0].replace('_per_s', '')}/s"
                    if tput
                    else "–"
                ),
            ]
        )
    t.caption = (
        "params: parameter count (min–max over norm variants: gains and biases differ); wall time "
        "includes data loading and evaluation; throughput counts training units per second of "
        "training step time. Scale: " + ", ".join(sorted({r.scale for r in grid.runs})) + "."
    )
    fp = default("precision")
    precisions = sorted({r.summary.get("precision", fp) for r in grid.runs if r.summary})
    if precisions and precisions != [fp]:  # say so only when it is not the default
        t.caption += " Precision: " + ", ".join(precisions) + "."
    return t


def runs_table(grid: Grid) -> Table:
    """One row per run (long format, machine-readable keys): what every other table is made of."""
    t = Table(
        "runs",
        "Every run",
        [
            "task",
            "norm",
            "norm_options",
            "seed",
            "scale",
            "status",
            "metric",
            "test",
            "valid",
            "steps",
            "wall_time_s",
            "params",
            "path",
        ],
        long=True,
    )
    paths = [str(r.path.resolve()) for r in grid.runs]
    root = (
        os.path.commonpath(paths)
        if len(paths) > 1
        else (str(grid.runs[0].path.resolve().parent) if paths else "")
    )
    for r in grid.runs:
        s = r.summary
        valid = (s.get("valid") or {}).get(r.metric) if r.metric else None
        t.rows.append(
            [
                r.task,
                r.norm,
                json.dumps(r.norm_options, sort_keys=True),
                str(r.seed),
                r.scale,
                r.status,
                r.metric or "",
                "" if r.value is None else repr(r.value),
                "" if valid is None else repr(float(valid)),
                str(s.get("steps", "")),
                "" if "wall_time_s" not in s else f"{s['wall_time_s']:.1f}",
                str(s.get("params", "")),
                os.path.relpath(str(r.path.resolve()), root),
            ]
        )
    t.caption = "test: the task metric of the best-valid checkpoint; paths relative to the runs' common folder."
    return t
