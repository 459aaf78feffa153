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

A confirmatory study (``--declaration``) is this grid under what its file declares: its looks,
futility floor, margins and alpha (its protocol), its own family of rows, its seeds in their
declared order and each norm's own lr; a row it declares exploratory trains the first look only.
"""

from __future__ import annotations

from typing import Optional, Sequence

from ...make_report import provider_for
from ...report.aggregate import Grid
from ...report.axis import task_of
from ...report.protocol import Protocol
from ...report.trained import gate_with
from ...study.fixed_grid import FixedGrid
from ...study.grid import Job
from .family import apply
from .findings import added_seeds, findings, look_sizes
from .protocol import protocol as campaign_protocol
from .protocol import settings


class SequentialGrid(FixedGrid):
    """The fixed grid of the primary study, with seeds added to its unresolved rows' norms."""

    def __init__(
        self,
        *args,
        max_seeds: int,
        protocol: Optional[Protocol] = None,
        family: Optional[str] = None,
        order: Optional[Sequence[int]] = None,
        **kw,
    ):
        """``protocol``: the one the rows are tested under (None: the campaign's); ``family``: the
        study whose family the rows are (None: the primary one); ``order``: every seed the grid may
        train, in the order it adds them (None: the first look's, then the next integers)."""
        super().__init__(*args, **kw)
        self.protocol = protocol or campaign_protocol()
        self.family = family or settings()["primary"]
        self.sizes = [n for n in (list(self.protocol.looks) or look_sizes()) if n <= max_seeds]
        self.order = (
            list(order)
            if order is not None
            else list(self.seeds) + added_seeds(list(self.seeds), max_seeds)
        )
        short = bool(self.sizes) and len(self.order) < self.sizes[-1]
        if self.order[: len(self.seeds)] != list(self.seeds) or short:
            raise ValueError(
                f"seeds {self.order}: the first look's {self.seeds} first, then at least "
                f"{self.sizes[-1]} in all"
            )
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
            grid = gate_with(Grid(runs, protocol=self.protocol), provider_for(runs))
            rows = findings(grid)
            apply(self.family, rows, True, True, protocol=grid.protocol)
            seeds: dict[tuple, set] = {}
            for j in jobs:
                seeds.setdefault((j.task, j.norm), set()).add(j.seed)
            look = set().union(*seeds.values()) if seeds else set()
            # a row gains seeds only while it has every seed of the looks so far: one the rule
            # stopped at an earlier look stays stopped
            full, earlier = [], []
            for f in rows:
                # an exploratory row is outside the family: its first look is all it trains
                if f.primary and f.verdict("holm") == "unresolved":
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
        floor = self.protocol.futility
        lines = []
        if self.stopped:
            rows = ", ".join(
                f"{f.claim.key} on {f.column} ({f.resolve_chance:.2f})"
                for f in sorted(self.stopped, key=lambda f: f.resolve_chance)
            )
            lines.append(
                f"futility ({self.protocol.source or 'claims.yaml'}: {floor}): "
                f"{len(self.stopped)} unresolved row(s) gain no more seeds, their chance to resolve "
                f"by {self.sizes[-1]} seeds below {floor}: {rows}"
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
                Job(t, n, self.lrs.get((t, n)), s, v)
                for t in self.tasks
                for n in self.norms
                if (t, n) in pairs
                for v in self.variants
                for s in seeds
            ]
        return current
