"""The tuned comparison's protocol: which lrs seed 1 trains (the preset and its factors, widened
past an edge choice), which one it chooses (the best validation score of the selected checkpoint),
and the runs of a comparison by task, norm, lr and seed (``Sweep``). The grid that trains it is
tuned_grid.py; the tables and the report are tuned.py."""

from __future__ import annotations

import math
from typing import Callable, Optional

from ...report.aggregate import Grid
from ...report.norm_cards import sort_key as norm_sort_key
from ...report.roles import reported, selection_seeds
from ...report.runs import Run
from ...rundir import criterion as summary_criterion
from .protocol import protocol
from .studies import STUDIES

EXTEND = 2  # at most this many 2x steps beyond each edge of the planned grid
FINISHED = ("completed", "diverged")
TUNED_NORMS = list(STUDIES["tuned"]["norms"])


def lr_of(run: Run) -> Optional[float]:
    return ((run.config.get("task") or {}).get("train") or {}).get("lr")


def criterion(run: Run) -> tuple[str, Optional[float], bool]:
    """(name, value, higher is better) of what selected the run's checkpoint (rundir.criterion)."""
    return summary_criterion(run.summary)


def objective(run: Run) -> float:
    """The selected checkpoint's validation criterion, higher = better; -inf unless completed."""
    _, v, higher = criterion(run)
    if run.status != "completed" or v is None or not math.isfinite(v):
        return -math.inf
    return float(v) if higher else -float(v)


def planned_lrs(preset: float, factors: list[float]) -> list[float]:
    """The preset lr and the preset times each factor, rounded to 3 significant digits (as
    normlab-tune rounds them: a readable run folder, lr=0.00141)."""
    return [preset if f == 1.0 else float(f"{preset * f:.3g}") for f in sorted({1.0, *factors})]


def select(points: dict[float, Run], preset: float) -> Optional[float]:
    """The lr of the best validation score among ``points`` (lr -> seed-1 run); ties go to the lr
    nearest the preset. None when every point diverged or failed."""
    scored = [(objective(r), -abs(math.log(lr / preset)), lr) for lr, r in points.items()]
    best = max(scored)
    return None if best[0] == -math.inf else best[2]


def grid_lrs(
    preset: float,
    factors: list[float],
    finished: Callable[[float], Optional[Run]],
    extend: int = EXTEND,
) -> list[float]:
    """The seed-1 lrs of one task and norm: the planned grid, widened by one 2x step at a time on
    the side where the best finished point sits at the edge (an edge choice says the optimum may lie
    outside), at most ``extend`` steps per side. ``finished(lr)`` is the finished seed-1 run at
    ``lr`` or None; the grid only grows once every point of it has finished."""
    lrs = planned_lrs(preset, factors)
    steps = {"up": 0, "down": 0}
    while True:
        points = {lr: finished(lr) for lr in lrs}
        if any(r is None or r.status not in FINISHED for r in points.values()):
            return lrs
        best = select(points, preset)
        if best is not None and best == lrs[-1] and steps["up"] < extend:
            steps["up"] += 1
            lrs = lrs + [float(f"{lrs[-1] * 2:.3g}")]
        elif best is not None and best == lrs[0] and steps["down"] < extend:
            steps["down"] += 1
            lrs = [float(f"{lrs[0] / 2:.3g}")] + lrs
        else:
            return lrs


class Sweep:
    """The runs of one tuned comparison, by task, norm, lr and seed."""

    def __init__(self, runs: list[Run], factors: list[float], extend: int = EXTEND):
        self.factors, self.extend = sorted({1.0, *factors}), extend
        self.by: dict[tuple[str, str], dict[float, dict[int, Run]]] = {}
        self.preset: dict[tuple[str, str], float] = {}
        for r in runs:
            if lr_of(r) is None:
                continue
            self.by.setdefault((r.task, r.norm), {}).setdefault(float(lr_of(r)), {})[r.seed] = r
            if not r.setting:
                self.preset[(r.task, r.norm)] = float(lr_of(r))
        self.grid = Grid(runs, protocol=protocol())

    def lrs(self, key) -> list[float]:
        base = self.preset.get(key)
        return (
            [] if base is None else grid_lrs(base, self.factors, self.seed1(key).get, self.extend)
        )

    def factor(self, key, lr: float) -> float:
        """The grid factor ``lr`` stands for (lrs are rounded to 3 digits, so lr / preset is not exact)."""
        lo, hi = self.factors[0], self.factors[-1]
        nominal = [
            *self.factors,
            *(hi * 2**k for k in range(1, self.extend + 1)),
            *(lo / 2**k for k in range(1, self.extend + 1)),
        ]
        return min(nominal, key=lambda f: abs(math.log(lr / self.preset[key] / f)))

    def seed1(self, key) -> dict[float, Run]:
        """The selection seed's run at each lr (normlab/configs/study/seeds.yaml: seed 1)."""
        s = selection_seeds()[0]
        return {lr: seeds[s] for lr, seeds in self.by.get(key, {}).items() if s in seeds}

    def chosen(self, key) -> Optional[float]:
        """The chosen lr, once seed 1 has finished at every planned lr."""
        points = self.seed1(key)
        planned = self.lrs(key)
        if not planned or any(
            lr not in points or points[lr].status not in FINISHED for lr in planned
        ):
            return None
        return select({lr: points[lr] for lr in planned}, self.preset[key])

    def choice(self, key) -> str:
        lr, points, planned = self.chosen(key), self.seed1(key), self.lrs(key)
        if lr is not None:
            edge = " at the grid's edge" if lr in (min(planned), max(planned)) else ""
            return f"{lr:g} ({self.factor(key, lr):.2f}×{edge})"
        done = sum(1 for x in planned if x in points and points[x].status in FINISHED)
        return (
            "all diverged"
            if planned and done == len(planned)
            else f"pending ({done}/{len(planned) or '?'} lrs)"
        )

    def keys(self) -> list[tuple[str, str]]:
        cols = self.grid.columns
        return sorted(
            self.by,
            key=lambda k: (cols.index(k[0]) if k[0] in cols else 99, norm_sort_key(k[1])),
        )

    def runs_at(self, key, lr: Optional[float]) -> list[Run]:
        """The reported runs at ``lr``: never the selection seed's, which chose it."""
        return [] if lr is None else reported(list(self.by.get(key, {}).get(lr, {}).values()))
