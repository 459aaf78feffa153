"""The fixed-lr grid: every task x norm x variant x seed at the preset lr, or at each cell's own lr
where a declaration fixes one; a grid whose lrs follow from its selection runs is a campaign's
own."""

from __future__ import annotations

from typing import Optional, Sequence

from .grid import Job, Study


class FixedGrid(Study):
    """tasks x norms x variants x seeds at the preset lr (the fixed-lr grid, the pre-norm and the
    placement studies); ``variants``: override lists, one per point of the study's own axis."""

    def __init__(
        self,
        tasks: list[str],
        norms: list[str],
        seeds: list[int],
        variants: Sequence[Sequence[str]] = ((),),
        lrs: Optional[dict] = None,
        **kw,
    ):
        super().__init__(**kw)
        self.tasks, self.norms, self.seeds = tasks, norms, seeds
        self.lrs = dict(lrs or {})  # (task, norm) -> its own lr (a declaration's); else the preset
        self.variants = [tuple(v) for v in variants]

    def jobs(self) -> list[Job]:
        # a seed's norms one after another: a slice that ends leaves few seeds half-trained, and
        # the executor completes those it began (Study.pair_of), so a pair trains on one machine
        return [
            Job(t, n, self.lrs.get((t, n)), s, v)
            for t in self.tasks
            for v in self.variants
            for s in self.seeds
            for n in self.norms
        ]
