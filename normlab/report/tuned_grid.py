"""The tuned comparison's grid (scripts/reproduce_tuned.py): which jobs exist yet, where their runs
and copies live, how each is trained.

A job is one normlab-train run: task, norm, lr (None = the preset, the fixed-lr grid's run) and
seed. The grid names its jobs in stages, since a later stage needs the earlier ones' results: seed 1
at the preset lr (which tells the grid the preset), seed 1 at each factor of it (widened past an
edge choice, normlab.report.tuned.grid_lrs), then the other seeds at the chosen lr and at the
preset. A finished run is read once: its final summary never changes.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple, Optional

from .. import pin
from .runs import FINAL, export_if_changed, load_run
from .tuned import grid_lrs, select

NAME = "xu2019"


class Job(NamedTuple):
    task: str
    norm: str
    lr: Optional[float]   # None: the preset lr (the fixed-lr grid's run)
    seed: int

    def rel(self) -> Path:
        return Path(self.task) / self.norm / (f"lr={self.lr:g}" if self.lr is not None else "") / f"seed{self.seed}"


def fixed_grid_commit(a) -> Optional[str]:
    """The commit of the fixed-lr grid (results/<scale>/reproduce.json), when it was a clean one."""
    try:
        rec = json.loads((a.out.parent / a.scale / "reproduce.json").read_text())
    except (OSError, ValueError):
        return None
    return None if rec.get("git_dirty") else rec.get("git_commit")


class Grid:
    """The grid of ``a`` (scripts/reproduce_tuned.py's arguments), trained from the checkout ``code``
    of ``commit``."""

    def __init__(self, a, code: Optional[Path], commit: str = ""):
        self.a, self.code = a, code
        fixed = fixed_grid_commit(a)
        self.fixed_commit = bool(commit) and fixed == commit
        self.presets: dict[tuple[str, str], float] = {}
        self._final: dict[Job, tuple[Path, dict]] = {}
        self._runs: dict = {}
        self.unnamed: dict[str, int] = {}

    def run_dir(self, job: Job) -> Path:
        return self.a.root / self.a.scale / NAME / job.rel()

    def copy_dir(self, job: Job) -> Path:
        return self.a.out / "runs" / job.rel()

    def fixed_copy_dir(self, job: Job) -> Optional[Path]:
        """A preset-lr run's copy in the fixed-lr grid's results (results/<scale>/runs): on a fresh
        clone the run root is empty, and those runs are this grid's too when both grids have one commit."""
        if job.lr is not None or not self.fixed_commit:
            return None
        return self.a.out.parent / self.a.scale / "runs" / job.task / job.norm / f"seed{job.seed}"

    def final_dir(self, job: Job) -> Optional[Path]:
        """The copy or run directory holding ``job``'s final summary; None while it is not finished."""
        self.summary(job)
        return self._final.get(job, (None,))[0]

    def summary(self, job: Job) -> dict:
        """``job``'s final summary ({} while it is not finished); read once, since a final one never changes."""
        if job not in self._final:
            for d in filter(None, (self.copy_dir(job), self.run_dir(job), self.fixed_copy_dir(job))):
                try:
                    s = json.loads((d / "summary.json").read_text())
                except (OSError, ValueError):
                    continue
                if s.get("status") in FINAL:
                    self._final[job] = (d, s)
                    break
        return self._final.get(job, (None, {}))[1]

    def final_run(self, job: Job):
        """``job``'s finished run, loaded once (grid_lrs and select ask for it on every pass)."""
        if job not in self._runs and self.final_dir(job):
            self._runs[job] = load_run(self.final_dir(job))
        return self._runs.get(job)

    def preset(self, task: str, norm: str) -> Optional[float]:
        """The preset lr, read from the preset-lr run's config (so it is the pinned commit's)."""
        if (task, norm) not in self.presets:
            first = Job(task, norm, None, 1)
            for d in filter(None, (self.copy_dir(first), self.run_dir(first), self.fixed_copy_dir(first))):
                if (d / "config.yaml").exists():
                    self.presets[(task, norm)] = float(load_run(d).config["task"]["train"]["lr"])
                    break
        return self.presets.get((task, norm))

    def jobs(self) -> list[Job]:
        """Every job of the grid that can be named yet (the later stages need the earlier ones'
        results), finished or not, in priority order. Sets ``unnamed``: about how many jobs follow
        once the pending lr choices are made (no widening, an own lr other than the preset)."""
        out, self.unnamed = [], {}
        for task in self.a.tasks:
            for norm in self.a.norms:
                first = Job(task, norm, None, 1)
                out.append(first)
                base = self.preset(task, norm)
                later_seeds = len(self.a.seeds[1:]) + sum(not self.summary(Job(task, norm, None, s))
                                                          for s in self.a.seeds[1:])
                if base is None or not self.summary(first):
                    self.unnamed[task] = self.unnamed.get(task, 0) + len(self.a.factors) + later_seeds
                    continue   # the preset-lr run tells the grid its lr
                at = lambda lr: Job(task, norm, None if lr == base else lr, 1)  # noqa: E731
                lrs = grid_lrs(base, self.a.factors, lambda lr: self.final_run(at(lr)), self.a.extend)
                stage1 = [at(lr) for lr in lrs]
                out += [j for j in stage1 if j != first]
                if any(not self.summary(j) for j in stage1):
                    self.unnamed[task] = self.unnamed.get(task, 0) + later_seeds
                    continue
                best = select({lr: self.final_run(j) for lr, j in zip(lrs, stage1)}, base)
                for seed in self.a.seeds[1:]:
                    out += [Job(task, norm, lr, seed) for lr in dict.fromkeys([None, None if best in (None, base) else best])]
        return list(dict.fromkeys(out))

    def hours_left(self, runs) -> float:
        """About how many hours of one-job time are left: each task's jobs (named or not) times the
        mean wall time of that task's finished runs (of all runs for a task with none yet)."""
        walls: dict[str, list[float]] = {}
        for r in runs:
            walls.setdefault(r.task, []).append(float(r.summary.get("wall_time_s") or 0.0))
        every = [w for ws in walls.values() for w in ws] or [0.0]
        left: dict[str, int] = dict(self.unnamed)
        for j in self.plan():
            left[j.task] = left.get(j.task, 0) + 1
        return sum(n * sum(walls.get(t, every)) / len(walls.get(t, every)) for t, n in left.items()) / 3600

    def plan(self) -> list[Job]:
        """Every job whose prerequisites are met and that is not finished, in priority order."""
        return [j for j in self.jobs() if not self.summary(j)]

    def command(self, job: Job) -> list[str]:
        threads = max(1, (os.cpu_count() or 1) // max(1, self.a.jobs))
        cmd = [sys.executable, "-m", "normlab.train", f"task={job.task}", f"norm={job.norm}", f"seed={job.seed}",
               f"scale={self.a.scale}", f"name={NAME}", f"paths.root={self.a.root}", f"threads={threads}",
               "progress=false", f"hydra.run.dir='{self.run_dir(job)}'"]
        return cmd + ([f"task.train.lr={job.lr:g}"] if job.lr is not None else [])

    def log(self, job: Job) -> Path:
        return self.a.root / "logs" / (str(job.rel()).replace("/", "_") + ".log")

    def train(self, job: Job) -> int:
        log = self.log(job)
        log.parent.mkdir(parents=True, exist_ok=True)
        with open(log, "ab") as f:
            return subprocess.run(self.command(job), cwd=self.code, env=pin.environ(self.code), stdout=f,
                                  stderr=subprocess.STDOUT).returncode

    def copy(self, job: Job) -> None:
        src = self.final_dir(job) or self.run_dir(job)
        if src != self.copy_dir(job):
            export_if_changed(src, self.copy_dir(job))
