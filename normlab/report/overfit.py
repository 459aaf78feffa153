"""The overfitting ablation: how far each norm's validation loss sits above its training loss.

The paper's bias-and-gain claim (its Enwiki8 figure) is that LayerNorm fits the training data
better and generalizes worse. The measures, per run, from its curves:
- the generalization gap: a valid loss minus the mean train loss of the last 10% of steps before
  that evaluation. The claim is tested on the gap at the last evaluation both runs of a seed have
  (findings.py): the same step for both norms, after the same training, so it needs no turn-up of
  the valid loss within the budget, and when a norm's optimum came does not decide the comparison;
- the valid-loss rise after its minimum, (last - min) / min in %: descriptive. Read as the claim's
  measure it is confounded by timing: a norm whose minimum comes earlier has more steps to rise;
- the gap at the best-validation checkpoint (what a run reports), beside the gap at the last.
A task whose LayerNorm valid loss rises less than ``regime_rise_pct`` (the report's protocol) is labelled as
not having reached its validation optimum in budget (descriptive).
"""

from __future__ import annotations

import statistics
from typing import Optional

from .aggregate import NORM_LABELS, Grid, data_sentence, finite, fmt
from .runs import Run
from .tables import Table


def _valid(run: Run) -> list[dict]:
    return [r for r in run.curves if r.get("split") == "valid" and finite(r.get("loss"))]


def valid_rise(run: Run) -> Optional[float]:
    """(last valid loss - its minimum) / minimum, in %, of a completed run; None without curves."""
    valid = _valid(run)
    if run.status != "completed" or not valid:
        return None
    low = min(r["loss"] for r in valid)
    return 100.0 * (valid[-1]["loss"] - low) / low if low > 0 else None


def _train_at(run: Run, s: int) -> Optional[float]:
    """The mean train loss logged over the last 10% of the steps up to ``s`` (train losses are
    measured with dropout on, the same way for every norm)."""
    train = [
        r
        for r in run.curves
        if r.get("split") == "train" and finite(r.get("loss")) and r["step"] <= s
    ]
    if not train:
        return None
    window = [r["loss"] for r in train if r["step"] > 0.9 * s] or [train[-1]["loss"]]
    return statistics.fmean(window)


def _gap_at(run: Run, record: Optional[dict]) -> Optional[float]:
    """Valid loss of ``record`` minus the train loss up to it (``_train_at``)."""
    if record is None:
        return None
    train = _train_at(run, record["step"])
    return None if train is None else record["loss"] - train


def losses_at_step(run: Run, step: Optional[int]) -> Optional[tuple[float, float]]:
    """(train loss, valid loss) at the evaluation of ``step``: the overfitting claim's measure, the
    two losses it compares at one step both norms evaluated."""
    record = next((r for r in _valid(run) if r["step"] == step), None) if step else None
    train = _train_at(run, step) if record else None
    return None if train is None else (train, record["loss"])


def gap_last(run: Run) -> Optional[float]:
    valid = _valid(run)
    return _gap_at(run, valid[-1]) if valid else None


def last_valid_step(run: Run) -> Optional[int]:
    valid = _valid(run)
    return valid[-1]["step"] if valid else None


def min_valid_step(run: Run) -> Optional[int]:
    """The step of the run's lowest valid loss (where its rise is measured from)."""
    valid = _valid(run)
    return min(valid, key=lambda r: r["loss"])["step"] if valid else None


def gap_at_step(run: Run, step: Optional[int]) -> Optional[float]:
    """The gap at the evaluation of ``step`` (a step both norms of a claim row evaluated: the
    overfitting claim compares them at the same step, so how early a norm peaked cannot move it)."""
    if step is None:
        return None
    return _gap_at(run, next((r for r in _valid(run) if r["step"] == step), None))


def gap_best(run: Run) -> Optional[float]:
    """The gap at the evaluation that chose the run's checkpoint (summary best_step)."""
    best = run.summary.get("best_step")
    return _gap_at(run, next((r for r in _valid(run) if r["step"] == best), None))


def rise_curve(run: Run) -> list[tuple[int, float]]:
    """The valid loss relative to the run's minimum, in %, at every evaluation (for the figure)."""
    valid = _valid(run)
    low = min((r["loss"] for r in valid), default=0.0)
    return [(r["step"], 100.0 * (r["loss"] - low) / low) for r in valid] if low > 0 else []


def _values(runs: list[Run], get) -> list[float]:
    return [v for r in runs if r.status == "completed" and (v := get(r)) is not None]


def ln_rise(grid: Grid, column: str) -> Optional[float]:
    """LayerNorm's mean valid-loss rise in ``column`` (None without LayerNorm runs)."""
    vals = _values(grid.norm_cell(column, "layernorm").runs, valid_rise)
    return statistics.fmean(vals) if vals else None


def in_regime(grid: Grid, column: str) -> Optional[bool]:
    rise = ln_rise(grid, column)
    return None if rise is None else rise >= grid.protocol.regime_rise_pct


def regime_label(grid: Grid, column: str) -> str:
    rise, limit = ln_rise(grid, column), grid.protocol.regime_rise_pct
    if rise is None:
        return "– (no LayerNorm runs)"
    return (
        f"overfits (LayerNorm +{rise:.1f}%)"
        if rise >= limit
        else f"outside the regime (LayerNorm +{rise:.1f}% < {limit:g}%)"
    )


def _stat(vals: list[float], decimals: int, unit: str = "") -> str:
    if not vals:
        return "–"
    s = f"{statistics.fmean(vals):+.{decimals}f}{unit}"
    return (
        s
        + (f" ± {statistics.stdev(vals):.{decimals}f}" if len(vals) >= 2 else "")
        + f" ({len(vals)})"
    )


def _best_over_last(runs: list[Run]) -> str:
    pairs = [
        (r.summary["best_step"], r.summary["steps"])
        for r in runs
        if r.status == "completed" and "best_step" in r.summary and "steps" in r.summary
    ]
    if not pairs:
        return "–"
    return (
        f"{statistics.fmean(b for b, _ in pairs):.0f} / {statistics.fmean(s for _, s in pairs):.0f}"
    )


def overfitting_table(grid: Grid) -> Table:
    t = Table(
        "overfitting",
        "Overfitting where it lives: the valid-loss rise after its minimum and the gap at "
        "the best checkpoint",
        [
            "task",
            "norm",
            "best / last step",
            "valid rise after min (%)",
            "gap at best (nats)",
            "gap at last (nats)",
            "regime",
        ],
    )
    for c in grid.columns:
        label = regime_label(grid, c)
        for v in grid.variants():
            cell = grid.cell(c, v)
            runs = cell.runs
            if not runs:
                continue
            t.rows.append(
                [
                    c,
                    grid.label(v),
                    _best_over_last(runs),
                    _stat(_values(runs, valid_rise), 1, "%"),
                    _stat(_values(runs, gap_best), 3),
                    _stat(_values(runs, gap_last), 3),
                    "did not train" if cell.untrained else label,
                ]
            )
    t.caption = (
        "Per task and norm, mean ± std (n completed runs): the valid-loss rise after its minimum, (last − min) / "
        "min; the gap = valid loss minus the mean train loss of the last 10% of steps before that evaluation "
        "(train loss with dropout on), at the best-validation checkpoint (what the run reports) and at the last "
        "evaluation (which mixes generalization with how long a norm trained past its peak); best / last step: "
        "mean step of the best checkpoint and of the end of training. The bias-and-gain claim is tested on the "
        "gap at the last evaluation both norms' runs of a seed have (findings): the same step for both, so "
        "how early a norm peaked cannot move it. 'regime': a task whose LayerNorm valid loss rises less than "
        f"{grid.protocol.regime_rise_pct:g}% after its minimum ({grid.protocol.named}) did not "
        "reach its validation optimum in budget (descriptive; the gap needs no turn-up); a cell that did "
        "not train is named so there."
    )
    t.notes = [data_sentence(grid)]
    return t


def figure_note(grid: Grid) -> str:
    """The overfitting figure's numbers, per task: LayerNorm vs LayerNorm-simple."""
    parts = []
    for c in grid.columns:
        cells = {n: grid.norm_cell(c, n).runs for n in ("layernorm", "layernorm_simple")}
        if not all(cells.values()):
            continue
        rise = {n: _values(r, valid_rise) for n, r in cells.items()}
        gap = {n: _values(r, gap_best) for n, r in cells.items()}
        if not all(rise.values()):
            continue
        text = " vs ".join(f"{statistics.fmean(rise[n]):+.1f}%" for n in cells)
        gaps = " vs ".join(
            fmt(statistics.fmean(gap[n]), "loss", signed=True) if gap[n] else "–" for n in cells
        )
        outside = "" if in_regime(grid, c) else " (outside the regime)"
        parts.append(f"{c}{outside}: rise {text}, gap at best {gaps}")
    if not parts:
        return ""
    return (
        f"Valid-loss rise after its minimum and gap at the best checkpoint, "
        f"{NORM_LABELS['layernorm']} vs {NORM_LABELS['layernorm_simple']}: "
        + "; ".join(parts)
        + "."
    )
