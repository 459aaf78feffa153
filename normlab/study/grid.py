"""Where a study's runs live and how one is trained: run root, staged copies, committed copies.

A job is one normlab-train run: task, norm, lr (None = the preset), seed and a variant (overrides of
the study's further axis, e.g. the placement). Its run directory is
``<root>/<scale>/<name>/<task>/<norm>/[lr=<v>/][<variant>/]seed<k>`` under the run root of the
study's commit (normlab.study.pin), its copy the same path under ``<copies>/``. A job is finished
when a final summary (completed or diverged) of the study's commit is found in its copy, its run
directory, the results folder's committed copies or a sibling study's (the tuned grid shares the
fixed grid's preset-lr runs). A selection run of the record (normlab.report.roles) counts for a
selection job whatever its commit: the choice it made stays made.
"""

from __future__ import annotations

import json
import os
import sys
from abc import ABC, abstractmethod
from pathlib import Path
from typing import NamedTuple, Optional, Sequence

import yaml

from ..experiment import same_experiment
from ..files import read_yaml
from ..report.roles import SELECTION, role_of
from ..report.runs import export_if_changed, load_run
from ..rundir import FINAL
from . import pin
from .executor import prune_checkpoints


class Job(NamedTuple):
    task: str
    norm: str
    lr: Optional[float]  # None: the preset lr (the fixed-lr grid's run)
    seed: int
    variant: tuple[str, ...] = ()  # "key=value" overrides of the study's own axis

    def rel(self) -> Path:
        return (
            Path(self.task)
            / self.norm
            / (f"lr={self.lr:g}" if self.lr is not None else "")
            / variant_segment(self.variant)
            / f"seed{self.seed}"
        )


def without_lr(task: dict) -> dict:
    """A task config less its lr (a job's own, not the preset's)."""
    return {**task, "train": {k: v for k, v in (task.get("train") or {}).items() if k != "lr"}}


def without_draw(task: dict) -> dict:
    """A task config less its training subset's draw (``data.train_limit_seed``). The draw is a
    seed, like the run's: an lr chosen on one random subset is chosen no worse than on another,
    so a changed draw keeps a choice made, as a changed seed would. How many examples the subset
    holds (``train_limit``) is the experiment's and stays compared."""
    data = {k: v for k, v in (task.get("data") or {}).items() if k != "train_limit_seed"}
    return {**task, "data": data}


def variant_segment(variant: Sequence[str]) -> str:
    """``layernorm_scaling=true,placement=pre``: each override by the last part of its key, sorted
    (the driver composes no config, so it cannot take normlab.setting's shortest unique names)."""
    parts = (o.partition("=") for o in variant)
    return ",".join(sorted(f"{key.rsplit('.', 1)[-1]}={value}" for key, _, value in parts))


# the first commit whose runs record their seed role
ROLES_SINCE = "136578fb54e0"


class Study(ABC):
    """The runs of one study at ``commit`` (trained from the checkout ``code``).

    ``copies``: where finished runs are exported (the staging folder while the study is partial);
    ``committed``: the results folder's own copies; ``shared``: other folders whose copies of the
    same jobs count (a sibling study's). ``roles``: seed -> selection | evaluation."""

    def __init__(
        self,
        *,
        scale: str,
        name: str,
        root: Path,
        copies: Path,
        commit: str,
        dirty: bool,
        code: Optional[Path],
        roles: dict,
        jobs_n: int = 1,
        committed: Optional[Path] = None,
        shared: Sequence[Path] = (),
        overrides: Sequence[str] = (),
    ):
        self.scale, self.name, self.root, self.copies = scale, name, Path(root), Path(copies)
        self.commit, self.dirty, self.code, self.roles = commit, dirty, code, dict(roles)
        self.committed, self.shared, self.overrides = committed, list(shared), list(overrides)
        self.threads = max(1, (os.cpu_count() or 1) // max(1, jobs_n))
        self._final: dict[Job, tuple[Path, dict]] = {}
        # per task, about how many jobs follow once those named now finish (a staged grid's)
        self.unnamed: dict[str, int] = {}
        self._runs: dict = {}
        self._knows_roles: dict[str, bool] = {}
        self._checkouts: dict[str, Path] = {}
        # task -> its task config at the code trained (its lr included), when known: a selection
        # run of another commit counts only if it was trained at it (a changed preset re-selects)
        self.presets: dict[str, dict] = {}
        # task -> the commit of its copies when the study continues its results folder (commit_of)
        self.task_commits: dict[str, str] = {}

    # --- at which commit ---
    def commit_of(self, job: Job) -> str:
        """The commit ``job`` is trained at: the study's, or its task's own when the study continues
        a results folder that kept the task at another commit (a row never mixes code versions)."""
        return self.task_commits.get(job.task, self.commit)

    def kept(self, job: Job) -> bool:
        return self.commit_of(job) != self.commit

    # --- where ---
    def cwd_for(self, job: Job) -> Optional[Path]:
        """The checkout ``job`` runs from (None: this one); a kept task's commit is checked out
        once, when its first job starts."""
        if not self.kept(job):
            return self.code
        commit = self.commit_of(job)  # never "-dirty": such copies pin no study (pin.resolve)
        if commit not in self._checkouts:
            self._checkouts[commit] = pin.checkout(commit)
        return self._checkouts[commit]

    def env_for(self, job: Job) -> Optional[dict]:
        code = self.cwd_for(job)
        return pin.environ(code) if code else None

    def root_of(self, job: Job) -> Path:
        """The run root of ``job``'s commit: ``root`` is the study's, <base>/<commit[:12]>."""
        return pin.root_for(self.root.parent, self.commit_of(job)) if self.kept(job) else self.root

    def run_dir(self, job: Job) -> Path:
        return self.root_of(job) / self.scale / self.name / job.rel()

    def copy_dir(self, job: Job) -> Path:
        return self.copies / job.rel()

    def log(self, job: Job) -> Path:
        return self.root_of(job) / "logs" / self.name / (str(job.rel()).replace("/", "_") + ".log")

    def sources(self, job: Job) -> list[Path]:
        others = ([self.committed] if self.committed else []) + self.shared_for(job)
        return [self.copy_dir(job), self.run_dir(job)] + [Path(c) / job.rel() for c in others]

    def shared_for(self, job: Job) -> list[Path]:
        return self.shared

    # --- what is done ---
    def accepts(self, where: Path, summary: dict, job: Job) -> bool:
        if where == self.run_dir(job):
            return True  # the run root is the commit's own
        if role_of(summary) == SELECTION and self.roles.get(job.seed) == SELECTION:
            # the preset-lr run must be at the preset's lr too: it is the centre of the lr grid
            return self.at_preset(where, job.task, with_lr=job.lr is None)
        return (
            summary.get("git_commit") == self.commit_of(job)
            and bool(summary.get("git_dirty")) == self.dirty
        )

    def at_preset(self, where: Path, task: str, with_lr: bool = False) -> bool:
        """Whether the run in ``where`` was trained at ``task``'s preset (True when unknown): its
        task config less the subset's draw and the lr (a selection run's own), or with the lr
        (``with_lr``)."""
        preset = self.presets.get(task)
        if preset is None:
            return True
        try:
            task = dict(read_yaml(Path(where) / "config.yaml")["task"])
        except (OSError, ValueError, KeyError, TypeError, yaml.YAMLError):
            return False
        task, preset = without_draw(task), without_draw(preset)
        if not with_lr:
            task, preset = without_lr(task), without_lr(preset)
        return not same_experiment({"task": task}, {"task": preset})

    def summary(self, job: Job) -> dict:
        """``job``'s final summary ({} while it is not finished); read once, as a final one never changes."""
        if job not in self._final:
            for d in self.sources(job):
                s = self.final_in(d, job)
                if s:
                    self._final[job] = (d, s)
                    break
        return self._final.get(job, (None, {}))[1]

    def final_in(self, where: Path, job: Job) -> dict:
        """The final summary of ``job`` that ``where`` holds and this study accepts, else {}."""
        try:
            s = json.loads((where / "summary.json").read_text())
        except (OSError, ValueError):
            return {}
        return s if s.get("status") in FINAL and self.accepts(where, s, job) else {}

    def unreported(self) -> list[Job]:
        """Finished jobs that the results folder's own copies do not hold at the study's commit
        (found in the run root or a sibling's copies): they are staged, and the study promoted
        once complete, even when no job was left to train (a slice killed after its last run)."""
        return [
            j
            for j in self.jobs()
            if self.summary(j)
            and not (self.committed and self.final_in(Path(self.committed) / j.rel(), j))
        ]

    def final_dir(self, job: Job) -> Optional[Path]:
        self.summary(job)
        return self._final.get(job, (None,))[0]

    def final_run(self, job: Job):
        if job not in self._runs and self.final_dir(job):
            self._runs[job] = load_run(self.final_dir(job))
        return self._runs.get(job)

    def where(self, job: Job) -> str:
        """Where a finished job was found: copy, run root, committed or shared; "" when not finished."""
        d = self.final_dir(job)
        if d is None:
            return ""
        if d == self.copy_dir(job):
            return "copy"
        return "run root" if d == self.run_dir(job) else "committed"

    @abstractmethod
    def jobs(self) -> list[Job]:
        """Every job of the study that can be named yet, finished or not, in priority order."""

    def pair_of(self, job: Job) -> Optional[tuple]:
        """The runs a claim pairs ``job`` with share this key (task, evaluation seed, variant):
        they must train on one machine, as the same seed trains to other numbers on another CPU.
        None for a selection run, which is never paired."""
        if self.roles.get(job.seed) == SELECTION:
            return None
        return (job.task, job.seed, job.variant)

    def is_shared(self, job: Job) -> bool:
        """Whether another study trains ``job`` as much as this one (its cost is that study's)."""
        return False

    def futility_lines(self) -> list[str]:
        """The rows a declared futility rule withholds seeds from (a grid that adds seeds has some)."""
        return []

    def plan(self) -> list[Job]:
        """Every job whose prerequisites are met and that is not finished, in priority order."""
        return [j for j in self.jobs() if not self.summary(j)]

    # --- how ---
    def command(self, job: Job) -> list[str]:
        cmd = [
            sys.executable,
            "-m",
            "normlab.train",
            f"task={job.task}",
            f"norm={job.norm}",
            f"seed={job.seed}",
            f"scale={self.scale}",
            f"name={self.name}",
            f"paths.root='{self.root_of(job)}'",  # quoted: a comma or a space in it is no sweep
            f"threads={self.threads}",
            "progress=false",
            f"hydra.run.dir='{self.run_dir(job)}'",
        ]
        if job.seed in self.roles and self.knows_roles(job):
            cmd.append(f"seed_role={self.roles[job.seed]}")
        lr = [f"task.train.lr={job.lr:g}"] if job.lr is not None else []
        return cmd + lr + self.overrides + list(job.variant)

    def knows_roles(self, job: Job) -> bool:
        """Whether the code ``job`` runs records seed roles (``seed_role``, from ROLES_SINCE on); a
        study continued at an older commit (the selection record's) takes its runs' roles from
        normlab/configs/study/seeds.yaml instead. Git is asked once per commit, not per job."""
        commit = self.commit_of(job)
        if self.code is None and not self.kept(job):
            return True  # this checkout's own code
        if commit not in self._knows_roles:
            self._knows_roles[commit] = commit == pin.head() or pin.contains(commit, ROLES_SINCE)
        return self._knows_roles[commit]

    def copy(self, job: Job) -> None:
        """Export a finished run to the copies, and keep one checkpoint of it (a run that finished
        while no driver watched it, in a killed slice, is pruned here)."""
        src = self.final_dir(job) or self.run_dir(job)
        if src != self.copy_dir(job):
            export_if_changed(src, self.copy_dir(job))
        if self.summary(job):
            prune_checkpoints(self.run_dir(job))
