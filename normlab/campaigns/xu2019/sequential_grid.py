"""``--until-resolved``: the primary study adds seeds to the rows it cannot yet resolve.

The grid starts as the fixed study's (every task x norm at the first look's seeds). Once every run
of a look has finished it reads the primary family's rows from them as the report does (the cells
that did not train gated, one test per row by the claim's form, each row's p seq over the looks it
had, Holm over the rows: findings.py, family.py) and names the next look's seeds for the two norms
of every row still *unresolved*; a row that resolved (or has no test) gains none, nor does one the
declared futility rule stops (claims.yaml ``sequential.futility``: its chance to resolve by the
last look, report/sequential.py, below the floor), at this look or any later one. It stops at the
last look (claims.yaml ``sequential``, or ``--max-seeds``). The jobs are named in stages, as the
tuned grid's, so the driver's executor trains each look as soon as the one before has finished.
"""

from __future__ import annotations

from typing import Optional

from ...make_report import provider_for
from ...report.aggregate import Grid
from ...report.axis import task_of
from ...report.trained import gate_with
from ...study.fixed_grid import FixedGrid
from ...study.grid import Job
from .family import apply
from .findings import added_seeds, findings, look_sizes
from .protocol import protocol, settings


class SequentialGrid(FixedGrid):
    """The fixed grid of the primary study, with seeds added to its unresolved rows' norms."""

    def __init__(self, *args, max_seeds: int, **kw):
        super().__init__(*args, **kw)
        self.sizes = [n for n in look_sizes() if n <= max_seeds]
        # the seeds in the order they are added: the first look's, then the next integers
        self.order = list(self.seeds) + added_seeds(list(self.seeds), max_seeds)
        for s in self.order[len(self.seeds) :]:
            self.roles.setdefault(s, "evaluation")
        self._open: dict[frozenset, tuple] = {}
        # the rows the futility rule stopped at the last look read, and at an earlier one
        self.stopped: list = []
        self.stopped_before: list = []

    def open_pairs(self, jobs: list[Job]) -> set[tuple[str, str]]:
        """(task, norm) of the two norms of every primary row still unresolved on ``jobs``' runs,
        less the rows the declared futility rule stops (claims.yaml ``sequential.futility``)."""
        key = frozenset(jobs)
        if key not in self._open:
            runs = [r for j in jobs if (r := self.final_run(j)) is not None]
            grid = gate_with(Grid(runs, protocol=protocol()), provider_for(runs))
            rows = findings(grid)
            apply(settings()["primary"], rows, True, True, protocol=grid.protocol)
            seeds: dict[tuple, set] = {}
            for j in jobs:
                seeds.setdefault((j.task, j.norm), set()).add(j.seed)
            look = set().union(*seeds.values()) if seeds else set()
            # a row gains seeds only while it has every seed of the looks so far: one the rule
            # stopped at an earlier look stays stopped
            full, earlier = [], []
            for f in rows:
                if f.verdict("holm") == "unresolved":
                    task = task_of(f.column)
                    has = all(seeds.get((task, m)) == look for m in (f.claim.a, f.claim.b))
                    (full if has else earlier).append(f)
            pairs = {
                (task_of(f.column), n)
                for f in full
                if not f.stopped
                for n in (f.claim.a, f.claim.b)
                if n in self.norms
            }
            self._open[key] = pairs, [f for f in full if f.stopped], earlier
        pairs, self.stopped, self.stopped_before = self._open[key]
        return pairs

    def futility_lines(self) -> list[str]:
        """The unresolved rows the declared futility rule stopped, at the last look read."""
        floor = protocol().futility
        lines = []
        if self.stopped:
            rows = ", ".join(
                f"{f.claim.key} on {f.column} ({f.resolve_chance:.2f})"
                for f in sorted(self.stopped, key=lambda f: f.resolve_chance)
            )
            lines.append(
                f"futility (claims.yaml sequential.futility {floor}): {len(self.stopped)} "
                f"unresolved row(s) gain no more seeds, their chance to resolve by "
                f"{look_sizes()[-1]} seeds below {floor}: {rows}"
            )
        if self.stopped_before:
            rows = ", ".join(f"{f.claim.key} on {f.column}" for f in self.stopped_before)
            lines.append(f"stopped for futility at an earlier look, unresolved: {rows}")
        return lines

    def unresolved(self) -> Optional[set]:
        """The pairs still open after the looks made so far (None while a look is running)."""
        jobs = self.jobs()
        return None if any(not self.summary(j) for j in jobs) else self.open_pairs(jobs)

    def jobs(self) -> list[Job]:
        current = super().jobs()
        self.unnamed = {}
        for k in range(1, len(self.sizes)):
            if any(not self.summary(j) for j in current):
                break  # the next look is named once this one has finished
            pairs = self.open_pairs(current)
            if not pairs:
                break
            seeds = self.order[self.sizes[k - 1] : self.sizes[k]]
            current = current + [
                Job(t, n, None, s, v)
                for t in self.tasks
                for n in self.norms
                if (t, n) in pairs
                for v in self.variants
                for s in seeds
            ]
        return current
