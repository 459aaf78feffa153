"""Hydra callbacks: before a run or sweep, a runs folder that cannot be written is one line, not
Hydra's traceback; after a multirun, count job outcomes and exit with the number of failed jobs
(jobs that failed, plus sweep points whose config could not be composed: normlab's sweeper)."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

from hydra.core.utils import JobReturn, JobStatus
from hydra.experimental.callback import Callback
from omegaconf import DictConfig

from .. import exitcodes
from ..files import write_json
from ..rundir import read_summary


class Outcome(float):
    """A job's return value: its objective (a float, for sweepers that optimise) with its status."""

    def __new__(cls, value: float, status: str):
        obj = super().__new__(cls, value)
        obj.status = status
        return obj

    def __reduce__(self):  # joblib/submitit carry it between processes
        return (Outcome, (float(self), self.status))


class WritableRoot(Callback):
    """Hydra makes the run (or sweep) directory before the job starts, and reports a folder it
    cannot make with a traceback: check ``paths.root`` first."""

    def _check(self, config: DictConfig) -> None:
        from .. import exitcodes

        root = Path(str(config.paths.root))
        try:
            root.mkdir(parents=True, exist_ok=True)
            ok = os.access(root, os.W_OK | os.X_OK)
            why = "not writable"
        except OSError as e:
            ok, why = False, e.strerror
        if not ok:
            print(
                f"normlab: error: paths.root={root}: {why}; set paths.root=... to a folder you can write",
                file=sys.stderr,
            )
            sys.exit(exitcodes.BAD_INPUT)

    def on_run_start(self, config: DictConfig, **kwargs) -> None:
        self._check(config)

    def on_multirun_start(self, config: DictConfig, **kwargs) -> None:
        self._check(config)


def _invalid_file(sweep_dir) -> Path:
    # per sweep process: the sweeper and this callback run in the one process that sweeps
    return Path(str(sweep_dir)) / f".invalid_points.{os.getpid()}.jsonl"


def record_invalid(sweep_dir, point: str, error: str) -> None:
    """A sweep point the sweeper could not compose (hydra_plugins/normlab_sweeper), for the sweep's
    count: appended to a file in the sweep folder, read and removed when the sweep ends."""
    path = _invalid_file(sweep_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as f:
        f.write(json.dumps({"point": point, "error": error}) + "\n")


def invalid_points(sweep_dir, remove: bool = False) -> list[tuple[str, str]]:
    """The (point, error) pairs recorded for this process's sweep in ``sweep_dir``."""
    path = _invalid_file(sweep_dir)
    if not path.exists():
        return []
    points = [(r["point"], r["error"]) for r in map(json.loads, path.read_text().splitlines())]
    if remove:
        path.unlink()
    return points


PROGRESS = ".progress.jsonl"  # in the sweep folder: the sweep's size, then one line per job


def start_progress(sweep_dir, total: int) -> None:
    """The sweeper's first word: how many points the sweep has, and when it began."""
    path = Path(str(sweep_dir)) / PROGRESS
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"total": total, "start": time.time()}) + "\n")


def _minutes(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.1f} min" if seconds < 5400 else f"{seconds / 3600:.1f} h"


def progress(sweep_dir, status: str, what: str) -> str:
    """Record one finished point of a sweep (the jobs may run in other processes: one appended
    line each) and the line that says where the sweep is: done/total, each status, the time since
    it began and, from the finished points' pace, the time left; "" outside normlab's sweeper."""
    path = Path(str(sweep_dir)) / PROGRESS
    if not path.exists():
        return ""
    with open(path, "a") as f:  # one short write in append mode: whole lines from every process
        f.write(json.dumps({"status": status}) + "\n")
    head, *done = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    counts: dict[str, int] = {}
    for d in done:
        counts[d["status"]] = counts.get(d["status"], 0) + 1
    n, total = len(done), int(head["total"])
    elapsed = time.time() - float(head["start"])
    left = f", about {_minutes(elapsed / n * (total - n))} left" if 0 < n < total else ""
    return (
        f"[normlab] sweep {n}/{total} done ("
        + ", ".join(f"{v} {k}" for k, v in sorted(counts.items()))
        + f"), {_minutes(elapsed)} in{left}: {status} {what}"
    )


def record_failure(run_dir: Path, cfg: DictConfig, error: BaseException) -> None:
    """Mark a job that failed before training as failed, unless its directory already holds a run
    (that run's files stay untouched)."""
    run_dir = Path(run_dir)
    if (run_dir / "config.yaml").exists() or (run_dir / "summary.json").exists():
        return
    write_json(
        run_dir / "summary.json",
        {
            "status": "failed",
            "error": f"{type(error).__name__}: {error}",
            "task": cfg.task.name,
            "norm": cfg.norm.name,
            "seed": cfg.seed,
            "scale": cfg.scale,
            "name": cfg.name,
            "before_training": True,
        },
    )


class SweepSummary(Callback):
    """Counts each job's status. With the basic (in-process) launcher the job's return value is
    seen here; launchers that run jobs elsewhere (joblib, submitit) leave only the run
    directories, so then the summaries written during this sweep are counted instead."""

    def on_multirun_start(self, config: DictConfig, **kwargs) -> None:
        self.start = time.time()
        self.jobs: list[tuple[str, str]] = []
        invalid_points(config.hydra.sweep.dir, remove=True)  # a crashed earlier sweep's

    def on_job_end(self, config: DictConfig, job_return: JobReturn, **kwargs) -> None:
        # in the sweeping process, or a worker's (joblib, submitit): the line is printed by
        # whichever runs the job, whatever ``progress`` says
        if "MULTIRUN" not in str(config.hydra.get("mode")):
            return  # a single run, not a sweep
        value = job_return._return_value if job_return.status == JobStatus.COMPLETED else None
        status = str(getattr(value, "status", "failed"))
        out = str(config.hydra.runtime.output_dir)
        line = progress(config.hydra.sweep.dir, status, out)
        if line and int(os.environ.get("RANK", "0")) == 0:
            print(line, flush=True)
        if hasattr(self, "jobs"):
            self.jobs.append((status, out))

    def _from_files(self, root: Path) -> list[tuple[str, str]]:
        jobs = []
        for path in root.glob("**/summary.json"):
            if (
                path.stat().st_mtime >= self.start - 1
            ):  # runs skipped by this sweep are not re-counted
                jobs.append((read_summary(path).get("status", "unknown"), str(path.parent)))
        return jobs

    def on_multirun_end(self, config: DictConfig, **kwargs) -> None:
        root = Path(config.hydra.sweep.dir)
        jobs = (getattr(self, "jobs", None) or self._from_files(root)) + [
            ("invalid", f"{point}: {error}") for point, error in invalid_points(root, remove=True)
        ]
        counts: dict[str, int] = {}
        for status, _ in jobs:
            counts[status] = counts.get(status, 0) + 1
        failed = [d for status, d in jobs if status in ("failed", "invalid")]
        if int(os.environ.get("RANK", "0")) == 0:  # under torchrun every rank ends the same way
            print(
                f"[normlab] sweep {root}: "
                + ", ".join(f"{v} {k}" for k, v in sorted(counts.items()))
            )
            for d in failed:
                print(f"[normlab]   failed: {d}", file=sys.stderr)
        if failed:
            sys.exit(min(len(failed), 125))  # the exit status is the number of failed jobs
        stopped = [s for s, _ in jobs if s in exitcodes.STOPPED]
        if stopped:  # jobs in worker processes stopped by a signal to them alone: not done either
            if int(os.environ.get("RANK", "0")) == 0:
                print(
                    f"[normlab]   {len(stopped)} point(s) stopped before their end: re-run the same "
                    "command to resume them",
                    file=sys.stderr,
                )
            sys.exit(exitcodes.STOPPED[stopped[0]])
        if counts.get("locked"):  # another process holds them: the sweep is not done
            if int(os.environ.get("RANK", "0")) == 0:
                print(
                    f"[normlab]   {counts['locked']} point(s) held by another process: run the sweep "
                    "again once it ends",
                    file=sys.stderr,
                )
            sys.exit(exitcodes.LOCKED)
