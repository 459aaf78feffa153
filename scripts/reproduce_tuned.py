#!/usr/bin/env python
"""``make reproduce-tuned``: every norm at its own learning rate, then results/<scale>-tuned/.

    python scripts/reproduce_tuned.py --scale mini --tasks rt,sst2 --jobs 2 --budget-min 60

Protocol (normlab/report/tuned.py): per task and norm, seed 1 at the preset lr and at the factors
of normlab/configs/hparams_search/lr_grid.yaml (five lrs spanning 8x); the lr with the best
validation score is chosen (the grid widened by 2x steps, --extend per side, while the best sits
at its edge); then the other seeds at that lr and at the preset lr (the fixed-lr comparison). Jobs are scheduled task by task, so a partial grid has whole tasks: a task's
second-stage jobs go before the next task's first.

Like ``make reproduce-table`` (scripts/reproduce.py) the grid is pinned to one commit
(normlab.pin): the commit of the copies in <out>/runs, else that of results/<scale>'s fixed-lr
grid, so both comparisons come from the same code and share their preset-lr runs
(<root>/<commit[:12]>/<scale>/xu2019/<task>/<norm>/[lr=<v>/]seed<k>; on a fresh clone, the
fixed-lr grid's committed copies in results/<scale>/runs). Every job is one
``normlab-train`` process run from a clean worktree of the commit; each finished run is copied to
<out>/runs at once, so the copies can be committed while the grid runs, and a later session (on
any machine) continues from them. --budget-min stops starting jobs after that many minutes.
Exit status: 0 when the grid is complete, 3 when jobs are left (budget), 1 when a job failed.
"""
from __future__ import annotations

import argparse
import concurrent.futures as cf
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import NamedTuple, Optional

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from normlab import pin  # noqa: E402
from normlab.report import find_runs, load_run  # noqa: E402
from normlab.report import record as provenance  # noqa: E402
from normlab.report.runs import FINAL, export_if_changed  # noqa: E402
from normlab.report.tuned import EXTEND, TUNED_NORMS, grid_lrs, select, write_tuned_report  # noqa: E402
from normlab.rundir import atomic_write_bytes, criterion, write_json  # noqa: E402
from normlab.tune import load_search  # noqa: E402

ALL_TASKS = "rt,sst2,mnist,iwslt15_en_vi,iwslt14_de_en,enwik8,ptb,imdb"   # cheapest first
NAME = "xu2019"
FAIL_FAST = 3   # a session whose first jobs all fail (no data, a broken checkout) stops instead of trying every job


class Job(NamedTuple):
    task: str
    norm: str
    lr: Optional[float]   # None: the preset lr (the fixed-lr grid's run)
    seed: int

    def rel(self) -> Path:
        return Path(self.task) / self.norm / (f"lr={self.lr:g}" if self.lr is not None else "") / f"seed{self.seed}"


def parse(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--scale", default="mini")
    p.add_argument("--tasks", default=ALL_TASKS, help=f"in priority order (default {ALL_TASKS})")
    p.add_argument("--norms", default=",".join(TUNED_NORMS))
    p.add_argument("--seeds", default="1,2,3", help="seed 1 chooses the lr; all are trained at it")
    p.add_argument("--search", default="lr_grid", help="hparams_search preset with the lr factors")
    p.add_argument("--extend", type=int, default=None,
                   help="widen the grid by at most this many 2x steps past an edge choice (default: the "
                        f"results' own, from their reproduce.json, else {EXTEND})")
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    p.add_argument("--root", type=Path, default=Path.cwd() / "runs")
    p.add_argument("--out", type=Path, default=None, help="default ./results/<scale>-tuned")
    p.add_argument("--commit", default=None, help="train at this commit (default: see above)")
    p.add_argument("--working-tree", action="store_true",
                   help="train from this checkout as it is (development and tests; see scripts/reproduce.py)")
    p.add_argument("--budget-min", type=float, default=None, help="start no job after this many minutes")
    p.add_argument("--no-train", action="store_true", help="only re-write the report from the copies")
    p.add_argument("--no-figures", action="store_true")
    a = p.parse_args(argv)
    a.tasks, a.norms = a.tasks.split(","), a.norms.split(",")
    a.seeds = [int(s) for s in a.seeds.split(",")]
    a.out = (a.out or Path.cwd() / "results" / f"{a.scale}-tuned").resolve()
    a.factors = [float(f) for f in load_search(a.search)["params"]["task.train.lr"]["factor_choices"]]
    if a.extend is None:   # a grid keeps its widening rule across sessions and report-only passes
        a.extend = int((provenance.read(a.out).get("grid") or {}).get("extend", EXTEND))
    return a


def fixed_grid_commit(a) -> Optional[str]:
    """The commit of the fixed-lr grid (results/<scale>/reproduce.json), when it was a clean one."""
    try:
        rec = json.loads((a.out.parent / a.scale / "reproduce.json").read_text())
    except (OSError, ValueError):
        return None
    return None if rec.get("git_dirty") else rec.get("git_commit")


class Grid:
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


def train_all(a, g: Grid, start: float) -> tuple[int, int, bool]:
    """Run the plan to its end (or the budget's); returns (trained, failed, stopped by budget)."""
    running: dict[cf.Future, Job] = {}
    failed: set[Job] = set()
    trained, stopped = 0, False
    with cf.ThreadPoolExecutor(a.jobs) as pool:
        while True:
            over = a.budget_min is not None and time.time() - start > 60 * a.budget_min
            ready = [j for j in g.plan() if j not in running.values() and j not in failed]
            stopped = stopped or (over and bool(ready))
            while ready and len(running) < a.jobs and not over:
                job = ready.pop(0)
                print(f"[tuned] start {job.rel()}" + (f" (lr={job.lr:g})" if job.lr else " (preset lr)"), flush=True)
                running[pool.submit(g.train, job)] = job
            if not running:
                return trained, len(failed), stopped
            for job in g.jobs():   # finished elsewhere (the fixed-lr grid), or copies to refresh
                g.copy(job)
            done, _ = cf.wait(running, return_when=cf.FIRST_COMPLETED)
            for fut in done:
                job, rc = running.pop(fut), fut.result()
                g.copy(job)
                status = g.summary(job).get("status", f"exit {rc}")
                trained += 1
                if job.seed == 1 or status not in ("completed",):
                    name, value, _ = criterion(g.summary(job))
                    print(f"[tuned] {job.rel()}: {status}" + (f", valid {name} {value:.4g}" if value is not None else ""),
                          flush=True)
                if status not in FINAL:
                    failed.add(job)   # not retried in this session: its log says why
                    if len(failed) >= FAIL_FAST and len(failed) == trained:
                        print(f"[tuned] error: the first {trained} jobs of this session all failed; not starting "
                              f"more. The last one's log: {g.log(job)}", file=sys.stderr, flush=True)
                        for fut in running:
                            fut.cancel()
                        cf.wait(running)
                        return trained, len(failed), stopped


def main(argv=None) -> int:
    a = parse(argv)
    start, started = time.time(), provenance.utc_now()
    try:
        commit, code, dirty = pin.resolve(a.out / "runs", a.commit, a.working_tree, fallback=fixed_grid_commit(a))
        code = code or (None if a.no_train else pin.checkout(commit))
    except pin.PinError as e:
        print(f"[tuned] error: {e}", file=sys.stderr)
        return 2
    a.root = pin.root_for(a.root.resolve(), commit, dirty)
    g = Grid(a, code, commit)
    print(f"[tuned] scale={a.scale} tasks={','.join(a.tasks)} norms={','.join(a.norms)} at commit {commit[:12]}; "
          f"lr factors {', '.join(f'{f:g}' for f in sorted({1.0, *a.factors}))}", flush=True)
    trained = n_failed = 0
    stopped = False
    if not a.no_train:
        trained, n_failed, stopped = train_all(a, g, start)
    for job in g.jobs():   # runs another grid trained (the fixed-lr grid's preset-lr runs) too
        g.copy(job)
    runs = find_runs([a.out / "runs"]) if (a.out / "runs").exists() else []
    written = write_tuned_report(runs, a.out, a.factors, figures=not a.no_figures, extend=a.extend) if runs else None
    left = len(g.plan())
    session = None if a.no_train else provenance.session("scripts/reproduce_tuned.py", argv, started, start,
                                                           trained=trained, failed=n_failed)
    record = provenance.record(a.out, f"make reproduce-tuned SCALE={a.scale}", commit, dirty, runs,
                        {"scale": a.scale, "tasks": a.tasks, "norms": a.norms, "seeds": a.seeds, "factors": a.factors,
                         "extend": a.extend}, session,
                        report_command=provenance.command("scripts/reproduce_tuned.py", argv) if a.no_train else None,
                        jobs_left=left,
                        jobs_left_unnamed=sum(g.unnamed.values()),
                        job_hours_left=round(g.hours_left(runs), 1))
    status = record["runs"]
    write_json(a.out / "reproduce.json", record)
    if written:
        hours = record["runs_wall_time_s"] / 3600
        head = [f"# Tuned comparison: scale {a.scale}", "",
                f"- Command: `{record['make']}` (continues from the copies in runs/); runs trained at git commit "
                f"`{commit}` ({'uncommitted changes, --working-tree' if dirty else 'clean checkout'}); tables written at `{record['report']['git_commit']}`",
                f"- Runs: {', '.join(f'{v} {k}' for k, v in sorted(status.items()))}; jobs still to run: {left} named, about "
                f"{record['jobs_left_unnamed']} more once their lr is chosen (about {record['job_hours_left']} h of "
                f"one-thread jobs); "
                f"sum of the runs' own wall times {hours:.2f} h over {len(record['sessions'])} session(s)", ""]
        body = (a.out / "report.md").read_text().split("\n", 1)[1]
        atomic_write_bytes(a.out / "README.md", ("\n".join(head) + body).encode())
        print(written["main"].markdown())
    print(f"[tuned] {trained} trained this session, {n_failed} failed; {len(runs)} run copies; {left} jobs left"
          + (" (budget reached)" if stopped else "")
          + (f"; about {record['jobs_left_unnamed']} more once their lr is chosen" if g.unnamed else "")
          + (f"; about {record['job_hours_left']} h of one-thread jobs left" if left else ""))
    return 1 if n_failed else (3 if left else 0)


if __name__ == "__main__":
    sys.exit(main())
