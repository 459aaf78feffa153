"""Which regime the runs measure: did training reach the validation optimum before it stopped?

A run whose best-validation checkpoint is its final evaluation (summary best_step == steps) was
still improving when it stopped: it measures how fast a norm trains early on, not how it
generalizes once the model overfits, which is what the paper's bias-and-gain claim is about.
"""

from __future__ import annotations

from .aggregate import Grid


def best_is_last(run) -> bool | None:
    s = run.summary
    if run.status != "completed" or "best_step" not in s or "steps" not in s:
        return None
    return s["best_step"] == s["steps"]


def regime_sentence(grid: Grid) -> str:
    """One sentence with the counts, per task and for LayerNorm, computed from the summaries."""
    per_task, total, ln = [], [0, 0], [0, 0]
    for c in grid.columns:
        flags = [f for r in grid.column_runs(c) if (f := best_is_last(r)) is not None]
        if flags:
            per_task.append(f"{c} {sum(flags)}/{len(flags)}")
            total[0], total[1] = total[0] + sum(flags), total[1] + len(flags)
        for r in grid.column_runs(c):
            if r.norm == "layernorm" and (f := best_is_last(r)) is not None:
                ln[0], ln[1] = ln[0] + f, ln[1] + 1
    if not total[1]:
        return ""
    what = (
        "most runs stopped before their validation optimum, so they measure early training, not the "
        "overfitting regime"
        if total[0] * 2 > total[1]
        else "most runs passed their validation optimum before they stopped"
    )
    return (
        f"Training regime: the best-validation checkpoint is the final evaluation in {total[0]} of {total[1]} "
        f"completed runs ({', '.join(per_task)}; LayerNorm {ln[0]}/{ln[1]}): {what}."
    )
