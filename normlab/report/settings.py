"""The settings table: one row per (task, norm, varied hyperparameters), each varied key a column.

A sweep over any key (``norm.options.C=1,2``, ``task.train.lr=...``, an Optuna search) gives runs
that differ in more than the norm; this table lays them side by side with their validation
(selected checkpoint) and test results, so the effect of each key can be read along a column.
"""

from __future__ import annotations

import statistics
from typing import Optional

from .aggregate import NORM_LABELS, Grid, fmt
from .tables import Table


def _valid(run) -> Optional[float]:
    v = (run.summary.get("best_valid") or {}).get(run.metric)
    return None if v is None or run.status != "completed" else float(v)


def _mean_std(values: list[float], metric: Optional[str]) -> str:
    if not values:
        return "–"
    if len(values) == 1:
        return fmt(values[0], metric)
    return f"{fmt(statistics.mean(values), metric)} ± {fmt(statistics.stdev(values), metric)}"


def settings_table(grid: Grid) -> Optional[Table]:
    """None unless some run has a varied hyperparameter (the usual task x norm grid has none)."""
    runs = [r for r in grid.runs if "setting" in r.summary]
    keys = sorted({k for r in runs for k in r.setting})
    if not keys:
        return None
    groups: dict[tuple, list] = {}
    for r in runs:
        groups.setdefault(
            (grid.task_column(r), r.norm, tuple(str(r.setting.get(k, "")) for k in keys)), []
        ).append(r)
    rows = []
    for (column, norm, values), rs in sorted(groups.items()):
        metric = rs[0].metric
        arrow = "↑" if rs[0].higher_is_better else "↓"
        status = {
            s: sum(1 for r in rs if r.status == s)
            for s in ("completed", "diverged", "failed", "incomplete")
        }
        rows.append(
            [
                column,
                NORM_LABELS.get(norm, norm),
                *[v or "(default)" for v in values],
                f"{metric} {arrow}" if metric else "",
                str(status["completed"]),
                ", ".join(f"{n} {s}" for s, n in status.items() if n and s != "completed") or "–",
                _mean_std([v for r in rs if (v := _valid(r)) is not None], metric),
                _mean_std([r.value for r in rs if r.value is not None], metric),
            ]
        )
    return Table(
        "settings",
        "Runs by varied hyperparameters",
        ["task", "norm", *keys, "metric", "completed", "other", "valid (selected)", "test"],
        rows,
        caption="One row per task, norm and setting (the hyperparameters that differ from the task/norm/"
        "scale defaults; '(default)' = not varied); mean ± std over seeds of completed runs, with "
        "the validation score of each run's selected checkpoint and its test score.",
    )
