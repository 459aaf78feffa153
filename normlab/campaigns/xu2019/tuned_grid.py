"""The tuned comparison's grid (``--study tuned`` of the campaign's driver): which jobs exist yet, where their runs
and copies live (normlab.study.grid), how each is trained.

A job is one normlab-train run: task, norm, lr (None = the preset, the fixed-lr grid's run) and
seed. The grid names its jobs in stages, since a later stage needs the earlier ones' results: the
selection seed at the preset lr (which tells the grid the preset), the selection seed at each factor
of it (widened past an edge choice, normlab.report.tuned.grid_lrs), then the evaluation seeds at the
chosen lr and at the preset. The preset-lr runs are the fixed-lr study's too: they are looked up in
its staged and committed copies, and trained into the same run root.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from ...files import read_yaml
from ...rundir import criterion
from ...study.grid import Job, Study
from ...study.staging import staging_dir
from .request import Request
from .studies import out_folder
from .tuned_protocol import grid_lrs, select

NAME = "xu2019"
__all__ = ["Grid", "Job", "NAME"]


class Grid(Study):
    """The grid a driver session asks for (``a``: its results folder, run root, tasks x norms, the lr
    factors and widening rule, the selection and evaluation seeds and their roles, jobs at a time),
    trained from the checkout ``code`` of ``commit``."""

    def __init__(self, a: Request, code: Optional[Path], commit: str = "", dirty: bool = False):
        fixed = a.out.parent / a.scale  # the fixed-lr study's results folder
        super().__init__(
            name=NAME,
            shared=[staging_dir(fixed) / "runs", fixed / "runs"],
            **a.study_args(commit, dirty, code),
        )
        # the selection runs of the studies this one reuses (studies.py "reuses"): their choice at
        # the same preset is the same choice, so their copies count for the same seed-1 jobs
        self.reused = [
            folder
            for study in a.decl.get("reuses", ())
            for folder in (
                staging_dir(a.out.parent / out_folder(study, a.scale)) / "runs",
                a.out.parent / out_folder(study, a.scale) / "runs",
            )
        ]
        self.a = a
        self.preset_lrs: dict[tuple[str, str], float] = {}
        # (task, norm) -> the selection seed's jobs by lr, whether every one has finished, the lr
        # chosen (None: pending, or none where every lr diverged or failed)
        self.choices: dict[tuple[str, str], tuple[dict[float, Job], bool, Optional[float]]] = {}

    def shared_for(self, job: Job) -> list[Path]:
        reused = self.reused if job.seed == self.a.select_seed else []
        return (self.shared if job.lr is None else []) + reused

    def is_shared(self, job: Job) -> bool:
        """A preset-lr evaluation run: the fixed-lr study's as much as this one's."""
        return job.lr is None and job.seed in self.a.eval_seeds

    def preset(self, task: str, norm: str) -> Optional[float]:
        """The preset lr (None until it is known), read from the config of the preset-lr selection
        run this study accepts: so it is the pinned commit's preset. A run it does not accept (an
        older preset's, in a committed or shared folder) would centre the lr grid on a preset the
        study does not train at."""
        if (task, norm) not in self.preset_lrs:
            where = self.final_dir(Job(task, norm, None, self.a.select_seed))
            if where is None:
                return None  # not cached: the run that says it may finish later this session
            config = read_yaml(where / "config.yaml")
            self.preset_lrs[(task, norm)] = float(config["task"]["train"]["lr"])
        return self.preset_lrs[(task, norm)]

    def jobs(self) -> list[Job]:
        """Every job of the grid that can be named yet (the later stages need the earlier ones'
        results), finished or not, in priority order. Sets ``unnamed``: about how many jobs follow
        once the pending lr choices are made (no widening, an own lr other than the preset)."""
        out, self.unnamed, self.choices = [], {}, {}
        for task in self.a.tasks:
            for norm in self.a.norms:
                first = Job(task, norm, None, self.a.select_seed)
                out.append(first)
                base = self.preset(task, norm)
                # the evaluation seeds at an own lr; those at the preset are the fixed study's
                later_seeds = len(self.a.eval_seeds)
                if base is None or not self.summary(first):
                    self.unnamed[task] = (
                        self.unnamed.get(task, 0) + len(self.a.factors) + later_seeds
                    )
                    continue  # the preset-lr run tells the grid its lr

                def at(lr, task=task, norm=norm, base=base):
                    return Job(task, norm, None if lr == base else lr, self.a.select_seed)

                lrs = grid_lrs(
                    base, self.a.factors, lambda lr, at=at: self.final_run(at(lr)), self.a.extend
                )
                stage1 = [at(lr) for lr in lrs]
                out += [j for j in stage1 if j != first]
                self.choices[(task, norm)] = (dict(zip(lrs, stage1)), False, None)
                if any(not self.summary(j) for j in stage1):
                    self.unnamed[task] = self.unnamed.get(task, 0) + later_seeds
                    continue
                best = select({lr: self.final_run(j) for lr, j in zip(lrs, stage1)}, base)
                self.choices[(task, norm)] = (dict(zip(lrs, stage1)), True, best)
                for seed in self.a.eval_seeds:
                    out += [
                        Job(task, norm, lr, seed)
                        for lr in dict.fromkeys([None, None if best in (None, base) else best])
                    ]
        return list(dict.fromkeys(out))

    def choice_lines(self) -> list[str]:
        """Per task and norm whose preset is known (after ``jobs()``): the selection seed's
        validation criterion at each lr of its grid, the preset marked, and the lr chosen."""
        out = []
        for (task, norm), (points, decided, best) in self.choices.items():
            base, cells, what = self.preset(task, norm), [], ""
            for lr, job in points.items():
                run = self.final_run(job)
                name, value, _ = criterion(run.summary) if run else ("", None, False)
                what = what or name
                shown = (
                    "to train" if run is None else run.status if value is None else f"{value:.4g}"
                )
                cells.append(f"{lr:g}{' (preset)' if lr == base else ''} {shown}")
            chosen = "pending" if not decided else "none" if best is None else f"{best:g}"
            out.append(f"[plan] seed {self.a.select_seed}, {task}/{norm}, valid {what}: "
                       f"{', '.join(cells)}; chosen {chosen}")  # fmt: skip
        return out
