"""The tuned comparison's lr-grid table: seed 1's validation score at each lr of each norm's grid,
the lr it chose, and beside them the other validation criterion (the loss where the metric selects,
the metric where the loss does) with the lr it would have chosen, shown and never used."""

from __future__ import annotations

from typing import Optional

from ...report.aggregate import NORM_LABELS, data_sentence, fmt
from ...report.runs import Run
from ...report.tables import Table
from .tuned_protocol import FINISHED, Sweep, criterion


def other_criterion(r: Run) -> tuple[str, Optional[float]]:
    """The validation criterion that did not select ``r``'s checkpoint, at its best over the run's
    evaluations: the loss where the metric selected, the metric where the loss did (None when the
    curves do not have it: valid BLEU is computed only with eval.valid_bleu)."""
    crit, _, _ = criterion(r)
    other, higher = ("loss", False) if crit != "loss" else (r.metric, r.higher_is_better)
    vals = [
        float(c[other])
        for c in r.curves
        if c.get("split") == "valid" and isinstance(c.get(other), (int, float))
    ]
    return other or "metric", (max(vals) if higher else min(vals)) if vals else None


def chosen_by_other(sw: Sweep, key) -> str:
    """The lr the other criterion would choose among the same seed-1 runs, or "–"."""
    points = {lr: r for lr, r in sw.seed1(key).items() if lr in sw.lrs(key)}
    scored = []
    for lr, r in points.items():
        name, v = other_criterion(r)
        if r.status == "completed" and v is not None:
            scored.append((v if name != "loss" and r.higher_is_better else -v, lr))
    if not scored or len(scored) < len(points):
        return "–"
    lr = max(scored)[1]
    return f"{lr:g} ({sw.factor(key, lr):.2f}×)"


def lr_grid_table(sw: Sweep) -> Table:
    grids = {key: sw.lrs(key) for key in sw.keys()}
    names = [
        f"{f:.2f}×" for f in sorted({sw.factor(k, lr) for k, lrs in grids.items() for lr in lrs})
    ]
    t = Table(
        "lr_grid",
        "Learning-rate grid: seed 1's validation score at each lr",
        ["task", "norm", "preset lr", *names, "chosen lr", "by the other criterion"],
    )
    for key, lrs in grids.items():
        points, cells = sw.seed1(key), dict.fromkeys(names, "")
        for lr in lrs:
            r, name = points.get(lr), f"{sw.factor(key, lr):.2f}×"
            if r is None or r.status not in FINISHED:
                cells[name] = "–" if r is None else r.status
            elif r.status == "diverged":
                cells[name] = "Diverge"
            else:
                crit, v, _ = criterion(r)
                other, w = other_criterion(r)
                cells[name] = (
                    "–" if v is None else fmt(v, crit) + ("" if crit == r.metric else f" {crit}")
                ) + ("" if w is None else f" ({other} {fmt(w, other)})")
        t.rows.append(
            [
                key[0],
                NORM_LABELS.get(key[1], key[1]),
                f"{sw.preset.get(key, float('nan')):g}",
                *cells.values(),
                sw.choice(key),
                chosen_by_other(sw, key),
            ]
        )
    t.caption = (
        "Validation score (what selected each run's checkpoint: the task's metric, ↑/↓ as in the other "
        "tables, or the validation loss, marked 'loss', for the tasks that select on it) of seed 1 at the preset lr times each factor; the chosen lr is the best of them (ties: "
        "the one nearest the preset). Where the best sat at the planned grid's edge, the grid was widened by "
        f"2× steps on that side (at most {sw.extend}); a blank cell = not part of that norm's grid. "
        "In brackets: the other criterion at its best over the run's evaluations (the validation loss "
        "where the metric selects; the metric where the loss does and it was evaluated), and the lr it "
        "would have chosen: shown, never used. Translation selects on greedy valid BLEU, since its valid "
        "loss kept improving while its BLEU fell. Test scores take no part in the choice."
    )
    t.notes = [data_sentence(sw.grid)]
    return t
