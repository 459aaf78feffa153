"""Grouping runs into table cells (task x norm variant) and formatting a cell honestly.

A cell's number is the mean ± sample standard deviation (ddof=1) of the test metric over its
completed runs, with n; diverged runs are never averaged in, they are counted and shown as
"Diverge (k/n)"; failed and unfinished runs are shown too, so a missing seed is never hidden.
"""

from __future__ import annotations

import json
import math
import statistics
from dataclasses import dataclass, field
from typing import Optional

from .axis import axis_label, axis_rank, major_first, setting_rank, task_of
from .data_notes import data_note
from .norm_cards import LABELS as NORM_LABELS
from .norm_cards import sort_key as norm_sort_key
from .protocol import DEFAULT, Protocol
from .runs import Run

# the shipped tasks in the paper's column order; a task of a user's package sorts after them
TASK_ORDER = [
    "iwslt14_de_en",
    "iwslt15_en_vi",
    "enwik8",
    "imdb",
    "rt",
    "sst2",
    "mnist",
    "ptb",
]
DECIMALS = {"acc": 2, "bleu": 2, "bpc": 3, "uas": 2, "las": 2, "loss": 3}


def decimals(metric: Optional[str]) -> int:
    return DECIMALS.get(metric or "", 3)


def fmt(x: float, metric: Optional[str], signed: bool = False) -> str:
    return f"{x:+.{decimals(metric)}f}" if signed else f"{x:.{decimals(metric)}f}"


@dataclass
class Cell:
    runs: list[Run] = field(default_factory=list)
    untrained: str = ""  # why the cell did not train (normlab.report.trained.gate); "" = it did

    def count(self, status: str) -> int:
        return sum(r.status == status for r in self.runs)

    @property
    def values(self) -> list[float]:
        return [r.value for r in self.runs if r.value is not None]

    @property
    def by_seed(self) -> dict[Optional[int], float]:
        """seed -> test value, over the runs that have one (what a pairing by seed reads)."""
        return {r.seed: r.value for r in self.runs if r.value is not None}

    @property
    def n(self) -> int:
        return len(self.runs)

    def labelled(self, text: str) -> str:
        """``text`` with "; did not train" after it when the cell did not train."""
        return f"{text}; did not train" if self.untrained else text

    @property
    def mean(self) -> Optional[float]:
        return statistics.fmean(self.values) if self.values else None

    @property
    def std(self) -> Optional[float]:
        return statistics.stdev(self.values) if len(self.values) >= 2 else None

    @property
    def metric(self) -> Optional[str]:
        return next((r.metric for r in self.runs if r.metric), None)

    @property
    def mixed(self) -> bool:
        """True when the cell's runs differ in more than seed/runtime keys (e.g. another lr)."""
        return len({r.fingerprint() for r in self.runs if r.config}) > 1

    def text(self) -> str:
        """ "72.00 ± 2.00 (3)", "Diverge (3/3)", "71.50 (1); Diverge (2/3)", "–" for no runs."""
        if not self.runs:
            return "–"
        parts = []
        vals, m = self.values, self.metric
        if vals:
            s = fmt(self.mean, m)
            if self.std is not None:
                s += f" ± {fmt(self.std, m)}"
            parts.append(f"{s} ({len(vals)})")
        for status, label in (
            ("diverged", "Diverge"),
            ("failed", "failed"),
            ("incomplete", "unfinished"),
        ):
            k = self.count(status)
            if k:
                parts.append(f"{label} ({k}/{self.n})")
        no_value = self.count("completed") - len(vals)
        if no_value:
            parts.append(f"no test metric ({no_value}/{self.n})")
        if self.untrained:
            parts.append("did not train")
        return "; ".join(parts) + (" †" if self.mixed else "")


def variant_key(run: Run, axis: tuple[str, ...] = ()) -> tuple[str, str]:
    """A table row: the norm plus the hyperparameters varied from its defaults (e.g. C=2, lr),
    less those of the study's axis (which name the column instead)."""
    setting = {k: v for k, v in run.setting.items() if k not in axis}
    return run.norm, json.dumps(setting, sort_keys=True)


class Grid:
    """Runs indexed by column (task, or task@scale when scales are mixed, and the value of the
    study's ``axis`` keys when it has any: normlab.report.axis) and row (norm variant), with the
    test protocol every table and test of them reads (normlab.report.protocol)."""

    def __init__(self, runs: list[Run], axis: tuple[str, ...] = (), protocol: Protocol = DEFAULT):
        # major key first: the column reads "placement=pre,layernorm_scaling=true" and sorts by it
        self.runs, self.axis = runs, major_first(tuple(axis), (r.setting for r in runs))
        self.protocol = protocol
        self.gated: dict[
            str, bool
        ] = {}  # column -> checked against its trivial baselines (trained.gate)
        self.multi_scale = len({r.scale for r in runs}) > 1
        self.cells: dict[tuple[str, tuple[str, str]], Cell] = {}
        self._at: dict[str, dict] = {}  # column -> its runs' values of the axis keys
        for r in runs:
            col = self.column(r)
            self._at.setdefault(col, {k: r.setting[k] for k in self.axis if k in r.setting})
            self.cells.setdefault((col, variant_key(r, self.axis)), Cell()).runs.append(r)
        # a norm run with two settings (e.g. AdaNorm C=1 and C=2, or two lrs) gets the differing
        # keys in its row label
        opts: dict[str, list[dict]] = {}
        for _, (norm, o) in self.cells:
            if json.loads(o) not in opts.setdefault(norm, []):
                opts[norm].append(json.loads(o))
        self._differ = {
            n: sorted({k for o in os_ for k in o if any(o.get(k) != p.get(k) for p in os_)})
            for n, os_ in opts.items()
            if len(os_) > 1
        }

    def task_column(self, run: Run) -> str:
        """The run's task column, without the axis (the settings table names the axis keys)."""
        return f"{run.task}@{run.scale}" if self.multi_scale else run.task

    def column(self, run: Run) -> str:
        at = axis_label(run.setting, self.axis)
        return self.task_column(run) + (f" [{at}]" if at else "")

    @property
    def columns(self) -> list[str]:
        return sorted(
            {c for c, _ in self.cells},
            key=lambda c: (
                TASK_ORDER.index(task_of(c)) if task_of(c) in TASK_ORDER else len(TASK_ORDER),
                task_of(c),
                axis_rank(self._at[c], self.axis),
                c,
            ),
        )

    def variants(self, norms: Optional[list[str]] = None) -> list[tuple[str, str]]:
        """Row keys in the norms' declared order (their configs' ``display.order``, else ``norms``'
        order); norms without runs are kept when named."""
        present = {v for _, v in self.cells}
        order = norms or sorted({n for n, _ in present}, key=norm_sort_key)
        rows = []
        for n in order:
            vs = sorted(
                (v for v in present if v[0] == n), key=lambda v: setting_rank(json.loads(v[1]))
            )
            rows.extend(vs or [(n, "{}")])
        return rows

    def label(self, variant: tuple[str, str]) -> str:
        norm, opts = variant
        base = NORM_LABELS.get(norm, norm)
        if norm in self._differ and json.loads(
            opts
        ):  # the norm's default setting keeps its plain name
            o = json.loads(opts)
            base += " (" + ", ".join(f"{k}={o.get(k, 'default')}" for k in self._differ[norm]) + ")"
        return base

    def cell(self, column: str, variant: tuple[str, str]) -> Cell:
        return self.cells.get((column, variant), Cell())

    def norm_cell(self, column: str, norm: str) -> Cell:
        """The runs of ``norm`` in ``column`` at its default setting (nothing varied) when there are
        such runs; its first setting otherwise (runs of a sweep over one norm's options)."""
        vs = [v for v in self.variants([norm]) if v[0] == norm]
        default = [v for v in vs if v[1] == "{}" and self.cell(column, v).runs]
        return self.cell(column, (default or vs)[0])

    def column_runs(self, column: str) -> list[Run]:
        return [r for (c, _), cell in self.cells.items() if c == column for r in cell.runs]

    def metric(self, column: str) -> tuple[Optional[str], bool]:
        for r in self.column_runs(column):
            if r.metric:
                return r.metric, r.higher_is_better
        return None, True


def outside(grid: Grid, col: str) -> str:
    """Why the column's task is declared outside the learning regime at its scale, or ""."""
    runs = grid.column_runs(col)
    return grid.protocol.outside(runs[0].task, runs[0].scale) if runs else ""


def data_sentence(grid: Grid, columns: Optional[list[str]] = None) -> str:
    """The caption sentence every table and figure carries: scale and the data of each column."""
    columns = grid.columns if columns is None else columns
    scales = ", ".join(sorted({r.scale for r in grid.runs})) or "?"
    # the axis columns of one task (enwik8 [placement=...]) that share their data share one note
    notes: dict[tuple[str, str], list[str]] = {}
    for c in columns:
        notes.setdefault((c.split(" [", 1)[0], data_note(grid.column_runs(c))), []).append(c)
    data = (
        "; ".join(
            f"{cs[0] if len(cs) == 1 else f'{key} (its {len(cs)} columns)'}: {note}"
            for (key, note), cs in notes.items()
        )
        or "no runs"
    )
    outside = sorted(
        {
            f"{r.task}: {why}"
            for c in columns
            for r in grid.column_runs(c)[:1]
            if (why := grid.protocol.outside(r.task, r.scale))
        }
    )
    regime = "".join(f" {o}." for o in outside)
    return f"Scale: {scales}. Data: {data}.{regime}"


def finite(x: Optional[float]) -> bool:
    return x is not None and math.isfinite(x)
