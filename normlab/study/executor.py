"""Train a study's jobs in one time-limited slice: a budget, a clean stop, no orphans, no re-training.

Every job is one ``normlab-train`` process in a process group of its own, so a Ctrl-C in the
driver's terminal reaches the driver only. The driver turns SIGTERM, SIGINT and SIGHUP into a
clean stop: it starts nothing more and sends SIGTERM to every running job, which writes a
checkpoint and exits 75 (preempted); the next slice resumes it from there. A job is also told to
stop when the driver dies without a word (SIGKILL, an allocation's end): the kernel sends it
SIGTERM (PR_SET_PDEATHSIG). A restart meanwhile finds its run locked and waits for the lock
instead of failing the run. ``budget_min``: no job starts after that many minutes, but for the
jobs that complete a pair begun in the slice (the study's ``pair_of(job)``, when it has one: the
norms of one evaluation seed, which a claim compares, so they train on one machine); the running
ones finish. Finished runs keep one checkpoint (best.pt, else last.pt): what the report, an
evaluation and a resume of a finished run need, a third of the disk. A failed job is not retried
in the slice; ``fail_fast`` jobs failing in a row (none finishing between them) stop the slice as
a stop signal does: they say the environment or the data is broken, not the runs.

The study (duck-typed) names its jobs: ``plan()`` the unfinished jobs whose prerequisites are met,
in priority order (asked again after every job, as later stages appear); ``command(job)``,
``run_dir(job)``, ``log(job)``, ``cwd_for(job)`` and ``env_for(job)`` (the checkout a job runs
from and its environment), ``summary(job)`` (final summary or {}) and ``copy(job)`` (export the
finished run to the results folder and keep one checkpoint of it).
"""

from __future__ import annotations

import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

from ..jobproc import AS_PREEMPTION, JobProcess, JobStartError, StopForwarding, status_of_exit
from ..progress import eta_line
from ..rundir import FINAL

KEEP = ("best.pt", "last.pt")  # the first that exists is kept
POLL_S = 0.5


@dataclass
class SliceResult:
    trained: int = 0  # jobs that ended with a final summary in this slice
    failed: list = field(default_factory=list)
    preempted: list = field(default_factory=list)  # stopped with a checkpoint, resumed next slice
    stopped: Optional[str] = None  # "budget", "failures" or the signal's name; None: plan ran out
    streak: int = 0  # jobs that failed since the last one that finished


def prune_checkpoints(run_dir: Path) -> int:
    """Keep one checkpoint of a finished run; returns the bytes freed."""
    ck = Path(run_dir) / "checkpoints"
    keep = next((ck / n for n in KEEP if (ck / n).exists()), None)
    freed = 0
    for p in ck.glob("*.pt*") if ck.is_dir() else []:
        if p != keep:
            freed += p.stat().st_size
            p.unlink()
    return freed


class Executor:
    def __init__(
        self,
        study,
        jobs: int,
        budget_min: Optional[float] = None,
        fail_fast: int = 3,
        say: Optional[Callable[[str], None]] = None,
        tag: str = "study",
    ):
        self.study, self.jobs, self.budget_min, self.fail_fast = (
            study,
            max(1, jobs),
            budget_min,
            fail_fast,
        )
        self.say, self.tag = (
            say or (lambda line: print(line, flush=True)),
            tag,
        )  # a detached slice's log is a file
        self.running: dict[JobProcess, object] = {}
        self.begun: set = set()  # the pairs (study.pair_of) a job of this slice started
        self.pair_of = getattr(study, "pair_of", lambda job: None)
        self.settled = False  # past the budget with no begun pair left to complete
        self.stops = StopForwarding(AS_PREEMPTION, self._announce)
        self.stops.jobs = self.running  # a stop reaches whatever runs at that moment
        # the budget's clock: a wall clock set back does not extend the slice
        self.start = time.monotonic()

    @property
    def stop_signal(self) -> Optional[str]:
        return None if self.stops.signum is None else signal.Signals(self.stops.signum).name

    def _announce(self, signum: int) -> None:
        self.say(
            f"[{self.tag}] {signal.Signals(signum).name}: starting no more jobs; {len(self.running)} running "
            "job(s) write a checkpoint and stop (the next slice resumes them)"
        )

    def over_budget(self) -> bool:
        return self.budget_min is not None and time.monotonic() - self.start > 60 * self.budget_min

    def run(self) -> SliceResult:
        out = SliceResult()
        waiting: dict = {}  # job -> lock holder, for runs another (orphaned) process still holds
        with self.stops:
            while True:
                if not self.stop_signal:
                    self._launch(out, waiting)
                if out.streak >= self.fail_fast:
                    self._stop_on_failures(out)
                    break
                if not self.running:
                    if waiting and not self.stop_signal and not self.over_budget():
                        time.sleep(
                            POLL_S
                        )  # an orphan of a killed slice holds them: wait for its checkpoint
                        continue
                    break
                time.sleep(POLL_S)
                self._reap(out)
        if out.stopped is None:  # a stop on failures says so already
            over = self.over_budget() and self.study.plan()
            out.stopped = self.stop_signal or ("budget" if over else None)
        return out

    def _stop_on_failures(self, out: SliceResult) -> None:
        """Jobs failing one after another say the environment or the data is broken, not the runs:
        the slice stops before it marks the rest of the grid failed, the running jobs checkpoint."""
        print(
            f"[{self.tag}] error: "
            + (
                f"the first {out.streak} jobs of this slice all failed"
                if not out.trained
                else f"{out.streak} jobs in a row failed (after {out.trained} finished)"
            )
            + f"; not starting more. The last one's log: {self.study.log(out.failed[-1])}",
            file=sys.stderr,
            flush=True,
        )
        out.stopped = "failures"
        for p in self.running:
            p.send(signal.SIGTERM)
        while self.running:
            time.sleep(POLL_S)
            self._reap(out)

    def _launch(self, out: SliceResult, waiting: dict) -> None:
        if len(self.running) >= self.jobs or out.streak >= self.fail_fast:
            return  # planning reads every unfinished job's summary: not on every poll of a full slice
        busy = set(self.running.values())
        done_here = set(out.failed)
        over = self.over_budget()
        if over and self.settled:
            return  # past the budget, nothing began is left to complete until a job ends
        planned = self.study.plan()
        if over:  # only what completes a pair this slice began
            planned = [j for j in planned if self.pair_of(j) in self.begun - {None}]
            self.settled = not planned
        for job in [j for j in waiting if j not in planned]:
            del waiting[job]  # its holder finished it meanwhile: nothing is left to wait for
        for job in planned:
            if len(self.running) >= self.jobs or out.streak >= self.fail_fast:
                return
            if job in busy or job in done_here:
                continue
            proc = JobProcess(
                self.study.command(job),
                self.study.run_dir(job),
                cwd=self.study.cwd_for(job),
                env=self.study.env_for(job),
                log=self.study.log(job),
            )
            holder = proc.holder()
            if holder:
                if job not in waiting:
                    self.say(
                        f"[{self.tag}] {job.rel()} is held by {holder} (a job of a stopped slice writing "
                        "its checkpoint): waiting for it"
                    )
                waiting[job] = holder
                continue
            waiting.pop(job, None)
            try:
                self.running[proc.start()] = job
            except JobStartError as e:
                self._failed(out, job, str(e))
                done_here.add(job)
                continue
            if self.stop_signal:  # a stop that came while it started
                proc.send(signal.SIGTERM)
            busy.add(job)
            self.begun.add(self.pair_of(job))
            self.say(
                f"[{self.tag}] start {job.rel()}"
                + (f" (lr={job.lr:g})" if getattr(job, "lr", None) else "")
            )

    def _reap(self, out: SliceResult) -> None:
        for p in [p for p in self.running if p.poll() is not None]:
            job, rc = self.running.pop(p), p.poll()
            self.settled = False
            summary = self.study.summary(job)
            status = summary.get("status")
            if status in FINAL:
                self.study.copy(job)  # and keeps one checkpoint
                out.trained += 1
                out.streak = 0
                value = _valid(summary)
                self.say(
                    f"[{self.tag}] {job.rel()}: {status}" + (f", valid {value}" if value else "")
                )
                named = len(
                    self.study.jobs()
                )  # the tuned grid names later stages as earlier ones finish
                total = named + sum((getattr(self.study, "unnamed", None) or {}).values())
                self.say(
                    eta_line(
                        named - len(self.study.plan()),
                        total,
                        out.trained,
                        time.monotonic() - self.start,
                        self.tag,
                    )
                )
            elif (kind := status_of_exit(rc)) == "stopped":
                out.preempted.append(job)
            elif kind == "locked":
                pass  # another process held it after all: planned again once its lock is free
            else:
                self._failed(out, job, f"exit {rc}")

    def _failed(self, out: SliceResult, job, why: str) -> None:
        out.failed.append(job)  # not retried in this slice: its log says why
        out.streak += 1
        self.say(f"[{self.tag}] {job.rel()}: failed ({why}); log {self.study.log(job)}")


def _valid(summary: dict) -> str:
    from ..rundir import criterion

    name, value, _ = criterion(summary)
    return f"{name} {value:.4g}" if value is not None else ""
