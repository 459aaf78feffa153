"""Did the timing of the valid-loss minimum drive the overfitting comparison? The check that
docs/statistics.md ("Overfitting at the same step") quotes.

    python scripts/overfit_timing.py [results/mini]

For every evaluation seed with a completed LayerNorm and LayerNorm-simple run of a task: LayerNorm's
head start (LayerNorm-simple's step of minimum valid loss minus LayerNorm's, as a fraction of the
run's steps; positive = LayerNorm's minimum came first), and the two differences LayerNorm minus
LayerNorm-simple in the valid-loss rise after the minimum (%) and in the generalization gap at the
last evaluation both runs have. Prints each task's mean head start, then the within-task
correlation (each quantity less its task's mean, pooled over tasks) of the head start with each
difference: a rise that timing drives correlates with the head start; the gap at a common step
should not.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from normlab.report.aggregate import Grid  # noqa: E402
from normlab.report.overfit import gap_at_step, min_valid_step, valid_rise  # noqa: E402
from normlab.report.roles import reported  # noqa: E402
from normlab.report.runs import find_runs  # noqa: E402
from normlab.report.verdicts import common_steps  # noqa: E402

PAIR = ("layernorm", "layernorm_simple")


def pairs(folder: Path) -> dict[str, list[tuple[float, float, float]]]:
    """task -> [(head start, rise difference, gap difference)] over the seeds both norms completed,
    the gap at the step the overfitting claim reads (the last evaluation both runs have)."""
    grid = Grid(reported(find_runs([folder / "runs"])))
    out: dict[str, list[tuple[float, float, float]]] = {}
    for column in grid.columns:
        cells = [grid.norm_cell(column, n) for n in PAIR]
        ln, simple = ({r.seed: r for r in c.runs if r.status == "completed"} for c in cells)
        rows = []
        for seed, step in sorted(common_steps(*cells).items()):
            a, b = ln[seed], simple[seed]
            rises, gaps = (
                (valid_rise(a), valid_rise(b)),
                (gap_at_step(a, step), gap_at_step(b, step)),
            )
            if None in rises or None in gaps:
                continue
            head = (min_valid_step(b) - min_valid_step(a)) / a.summary["steps"]
            rows.append((head, rises[0] - rises[1], gaps[0] - gaps[1]))
        out[column] = rows
    return out


def within_task_r(by_task: dict[str, list[tuple[float, ...]]], i: int, j: int) -> float:
    xs, ys = [], []
    for rows in by_task.values():
        mx, my = (statistics.fmean(r[k] for r in rows) for k in (i, j))
        xs += [r[i] - mx for r in rows]
        ys += [r[j] - my for r in rows]
    return statistics.correlation(xs, ys)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("folder", nargs="?", type=Path, default=ROOT / "results" / "mini")
    folder = p.parse_args(argv).folder
    try:
        found = pairs(folder)
    except FileNotFoundError as e:
        print(f"overfit_timing.py: {e}: give a results folder (results/mini)", file=sys.stderr)
        return 1
    by_task = {t: rows for t, rows in found.items() if len(rows) > 1}
    if not by_task:
        print(
            f"overfit_timing.py: no task in {folder}/runs has two seeds of both {PAIR}",
            file=sys.stderr,
        )
        return 1
    print("| task | seed pairs | LayerNorm's head start (mean, fraction of the run) |")
    print("|---|---|---|")
    for task, rows in by_task.items():
        print(f"| {task} | {len(rows)} | {statistics.fmean(r[0] for r in rows):+.3f} |")
    n = sum(map(len, by_task.values()))
    heads = [statistics.fmean(r[0] for r in rows) for rows in by_task.values()]
    print(
        f"\nLayerNorm's minimum came first on {sum(h > 0 for h in heads)} of {len(heads)} tasks"
        f" (at the same step on {sum(h == 0 for h in heads)}); over the {n} seed pairs the"
        f" within-task correlation of its head start with the rise difference is"
        f" {within_task_r(by_task, 0, 1):+.2f} and with the gap difference"
        f" {within_task_r(by_task, 0, 2):+.2f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
