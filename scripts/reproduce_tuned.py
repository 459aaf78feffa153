#!/usr/bin/env python
"""``make reproduce-tuned``: every norm at its own learning rate, then results/<scale>-tuned/.

    python scripts/reproduce_tuned.py --scale mini --tasks rt,sst2 --jobs 2 --budget-min 60

Protocol (normlab/report/tuned.py; the jobs: normlab/report/tuned_grid.py): per task and norm, seed 1 at the preset lr and at the factors
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
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from normlab import pin  # noqa: E402
from normlab.report import find_runs  # noqa: E402
from normlab.report import record as provenance  # noqa: E402
from normlab.report.runs import FINAL  # noqa: E402
from normlab.report.tuned import EXTEND, TUNED_NORMS, recorded_extend, write_tuned_report  # noqa: E402
from normlab.report.tuned_grid import Grid, Job, fixed_grid_commit  # noqa: E402
from normlab.rundir import atomic_write_bytes, criterion, write_json  # noqa: E402
from normlab.tune import load_search  # noqa: E402

ALL_TASKS = "rt,sst2,mnist,iwslt15_en_vi,iwslt14_de_en,enwik8,ptb,imdb"   # cheapest first
FAIL_FAST = 3   # a session whose first jobs all fail (no data, a broken checkout) stops instead of trying every job


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
    p.add_argument(provenance.RECORD_OUT, default=None, help=provenance.RECORD_OUT_HELP)
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
        a.extend = recorded_extend(a.out)
    return a


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
