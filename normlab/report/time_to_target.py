"""How fast each norm trains: steps and training seconds to a target, per task, and a performance
profile across tasks, as MLCommons AlgoPerf compares training algorithms. Descriptive: no verdict
here enters a claim's test.

Per column (a task, with the study's axis value when it has one): the target is the median over the
reference norm's runs (the protocol's ``time_to_target``: LayerNorm) of each run's best validation
value of the task's metric (the validation loss where the metric is not evaluated during training).
A run reaches it at its first validation record at least as good. Seconds are training seconds,
evaluation excluded: the steps to the target times the run's mean training step time
(``train_time_s / steps``; the curves record steps, not times). Per cell: how many runs reached the
target, the median of their steps and seconds (a run that did not reach it counts as later than any
that did) and a distribution-free interval of the median from order statistics (at least 90%
coverage; with 5 runs, their minimum to maximum at 93.75%). The profile: for each norm, the share of
columns in which its median seconds are within tau times the fastest norm's, tau from 1 to 4.
"""

from __future__ import annotations

import math
import statistics
from pathlib import Path
from typing import Optional

from .aggregate import Grid, data_sentence, finite, fmt, outside
from .axis import units
from .runs import Run
from .tables import Table

NOT_REACHED = math.inf
COVERAGE = 0.9


def _valid(run: Run) -> list[dict]:
    return [r for r in run.curves if r.get("split") == "valid"]


def measure(runs: list[Run]) -> tuple[str, bool]:
    """The validation value a column's target is set on: the task's metric where the runs'
    validation records carry it, else the validation loss (lower is better)."""
    for r in runs:
        if r.metric and any(finite(v.get(r.metric)) for v in _valid(r)):
            return r.metric, r.higher_is_better
    return "loss", False


def best(run: Run, key: str, higher: bool) -> Optional[float]:
    values = [v[key] for v in _valid(run) if finite(v.get(key))]
    return (max(values) if higher else min(values)) if values else None


def steps_to(run: Run, key: str, higher: bool, target: float) -> float:
    """The step of the run's first validation record at least as good as ``target``, else inf."""
    for v in _valid(run):
        x = v.get(key)
        if finite(x) and (x >= target if higher else x <= target):
            return float(v["step"])
    return NOT_REACHED


def step_seconds(run: Run) -> Optional[float]:
    """The run's mean training step time in seconds (evaluation excluded), None when unrecorded."""
    t, n = run.summary.get("train_time_s"), run.summary.get("steps")
    return t / n if finite(t) and n else None


def median_interval(values: list[float]) -> tuple[float, Optional[tuple[float, float]], float]:
    """(median, (low, high) or None, coverage): the order-statistic interval [x(k), x(n+1-k)] with
    the largest k whose coverage 1 - 2 P(Binomial(n, 1/2) < k) is at least COVERAGE."""
    xs, n = sorted(values), len(values)
    med = statistics.median(xs) if xs else NOT_REACHED
    below, best_k, coverage = 0.0, 0, 0.0
    for k in range(1, n // 2 + 1):
        below += math.comb(n, k - 1) / 2**n
        if 1 - 2 * below < COVERAGE:
            break
        best_k, coverage = k, 1 - 2 * below
    return med, ((xs[best_k - 1], xs[n - best_k]) if best_k else None), coverage


class Cell:
    """One norm's runs in one column: steps and seconds to the column's target."""

    def __init__(self, runs: list[Run], key: str, higher: bool, target: float, untrained: str = ""):
        self.n, self.untrained = len(runs), untrained
        self.steps = [steps_to(r, key, higher, target) for r in runs]
        per_step = [step_seconds(r) for r in runs]
        self.seconds = [
            s * t if t is not None else NOT_REACHED for s, t in zip(self.steps, per_step)
        ]
        self.reached = sum(math.isfinite(s) for s in self.steps)

    @property
    def median_seconds(self) -> float:
        return median_interval(self.seconds)[0]


def _fmt(x: float, unit: str) -> str:
    if not math.isfinite(x):
        return "not reached"
    return f"{x:.0f}" if unit == "steps" else f"{x:.1f}"


def _summary(values: list[float], unit: str) -> str:
    med, ci, _ = median_interval(values)
    if not any(math.isfinite(v) for v in values):
        return "not reached"
    text = _fmt(med, unit)
    return text + (f" [{_fmt(ci[0], unit)}, {_fmt(ci[1], unit)}]" if ci else "")


def cells(grid: Grid) -> dict[str, tuple[str, bool, Optional[float], dict]]:
    """column -> (measure, higher is better, target or None, {row label: Cell}); columns without
    a finished run of the reference norm have no target."""
    reference = grid.protocol.reference
    out = {}
    for col in grid.columns:
        runs = [r for r in grid.column_runs(col) if r.status in ("completed", "diverged")]
        key, higher = measure(runs)
        ref = [b for r in grid.norm_cell(col, reference).runs if (b := best(r, key, higher))]
        target = statistics.median(ref) if ref else None
        rows = {}
        for variant in grid.variants():
            cell = grid.cell(col, variant)
            done = [r for r in cell.runs if r.status in ("completed", "diverged")]
            if done and target is not None:
                rows[grid.label(variant)] = Cell(done, key, higher, target, cell.untrained)
        out[col] = (key, higher, target, rows)
    return out


def machines(runs: list[Run]) -> str:
    """Where the seconds were measured: device, threads and platform of the runs."""
    seen = sorted(
        {
            f"{r.summary.get('device') or r.config.get('device') or '?'}, "
            f"{r.config.get('threads', '?')} thread(s), "
            f"{(r.summary.get('versions') or {}).get('platform', '?')}"
            for r in runs
        }
    )
    return "; ".join(seen)


def time_to_target_table(grid: Grid) -> Table:
    reference = grid.protocol.reference
    table = Table(
        "time_to_target",
        "How fast each norm trains: steps and training seconds to the target",
        ["Task", "Norm", "Target", "Reached", "Steps to target", "Train s to target"],
    )
    for col, (key, _, target, rows) in cells(grid).items():
        regime = " (not in the learning regime)" if outside(grid, col) else ""
        for label, cell in rows.items():
            table.rows.append(
                [
                    col,
                    label,
                    f"valid {key} {fmt(target, key)}{regime}",
                    f"{cell.reached}/{cell.n}",
                    *(
                        ["did not train"] * 2
                        if cell.untrained
                        else [_summary(cell.steps, "steps"), _summary(cell.seconds, "s")]
                    ),
                ]
            )
    table.caption = (
        f"Descriptive (no verdict enters a test). Target per task: the median over "
        f"{reference}'s runs of their best validation value of the task's metric (the validation "
        "loss where the metric is not evaluated in training); a run reaches it at its first "
        "validation record at least as good. Median over the runs [an order-statistic interval "
        f"of the median, coverage >= {COVERAGE:.0%}: with 5 runs their minimum and maximum, "
        "93.75%; none below 5 runs]; a run that never reached the target counts as later than any "
        "that did. Seconds: training only (evaluation excluded), the steps times the run's mean "
        "step time. A cell that did not train is named so and not timed; a task outside the "
        "learning regime is marked and left out of the profile figure. Measured on: "
        f"{machines(grid.runs) or 'no runs'}."
    )
    table.notes = [data_sentence(grid)]
    return table


def profile(grid: Grid) -> tuple[list[float], dict[str, list[float]]]:
    """(taus, {row label: share of the columns where its median seconds are within tau times the
    column's fastest}) over the columns with a target and a norm that reached it."""
    lo, hi = grid.protocol.taus
    taus = [lo + (hi - lo) * i / 60 for i in range(61)]
    ratios: dict[str, list[float]] = {}
    columns = 0
    for col, (_, _, target, rows) in cells(grid).items():
        if outside(grid, col):
            continue
        times = {label: c.median_seconds for label, c in rows.items() if not c.untrained}
        fastest = min(times.values(), default=NOT_REACHED)
        if target is None or not math.isfinite(fastest) or fastest <= 0:
            continue
        columns += 1
        for label, t in times.items():
            ratios.setdefault(label, []).append(t / fastest)
    order = [grid.label(v) for v in grid.variants()]  # the norms' declared order, as every table
    shares = {
        label: [sum(x <= tau for x in ratios[label]) / columns for tau in taus]
        for label in sorted(ratios, key=lambda x: order.index(x) if x in order else len(order))
    }
    return taus, shares


def profile_figure(grid: Grid, out_dir: Path) -> str:
    """figures/time_to_target.png/pdf; returns its caption ("" when no column has a target)."""
    taus, shares = profile(grid)
    if not shares:
        return ""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from .style import norm_style

    norm_of = {grid.label(v): v[0] for v in grid.variants()}
    fig, ax = plt.subplots(figsize=(5.5, 3.6))
    for label, ys in shares.items():
        ax.step(taus, ys, where="post", label=label, **norm_style(norm_of.get(label, label)))
    ax.set_xlabel("τ (training seconds to the target / the fastest norm's)")
    over = units(grid.columns)
    one = "task" if over == "tasks" else "column"
    ax.set_ylabel(f"share of {one}s within τ")
    ax.set_ylim(-0.02, 1.02)
    ax.set_title("Time to target: performance profile")
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    out_dir.mkdir(parents=True, exist_ok=True)
    for ext in ("png", "pdf"):
        fig.savefig(out_dir / f"time_to_target.{ext}", dpi=150)
    plt.close(fig)
    return (
        "How fast each norm reaches the target (table time_to_target): for each norm, the share of "
        f"{over} in which its median training seconds to the target are within τ times the fastest "
        f"norm's in that {one}; a norm whose median run did not reach it never "
        "counts. Descriptive. " + data_sentence(grid)
    )
