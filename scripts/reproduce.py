#!/usr/bin/env python
"""``make reproduce-table``: train what is missing of the paper's grid, then write results/<scale>/.

    python scripts/reproduce.py --scale mini --tasks rt,sst2 --seeds 1,2,3 --jobs 2

1. The grid is tasks x (the norms of the chosen tables) x seeds, pinned to one git commit
   (normlab.pin): the commit of the run copies already in <out>/runs, else a clean HEAD. Its runs
   live in <root>/<commit[:12]>/<scale>/xu2019/<task>/<norm>/seed<k> and are trained from a clean
   worktree of that commit, so every run of a table comes from the same code.
2. A run counts as finished when its compact copy in <out>/runs (committed, e.g. by an earlier
   session on another machine) or its run directory has a final summary (completed or diverged).
   Copies are restored into the run root, so the sweep skips them.
3. If anything is missing, one Hydra sweep (normlab/configs/experiment/xu2019.yaml: joblib
   launcher, --jobs jobs, cores/jobs torch threads each) runs the grid: the runner skips finished
   runs and resumes interrupted or failed ones. Each run is copied to <out>/runs as soon as it
   finishes, so the copies can be committed while the grid runs (a grid may span sessions).
4. The report (normlab.report.write_report) is written from the copies, so `normlab-report
   <out>/runs --out DIR` re-creates the committed tables exactly. <out>/reproduce.json and
   <out>/README.md record the runs' commit, every session that trained part of the grid (command,
   machine, wall time, runs trained), and what the report says.
Exit status: 0, or 1 when a run of the grid failed or is missing (the report is written anyway).

``--report-only`` re-writes the tables from the committed run copies in <out>/runs (nothing is
trained or copied) and adds a "report" entry (command, git commit, dirty flag, time) to
<out>/reproduce.json, whose other fields keep describing the runs.
"""
from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Optional

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from normlab import pin  # noqa: E402
from normlab.integrations.wandb_results import log_results, wandb_options  # noqa: E402
from normlab.progress import RunProgress, watch  # noqa: E402
from normlab.report import find_runs, write_report  # noqa: E402
from normlab.report import record as provenance  # noqa: E402
from normlab.report.paper_tables import TABLES  # noqa: E402
from normlab.report.runs import FINAL, export_if_changed  # noqa: E402
from normlab.rundir import atomic_write_bytes, write_json  # noqa: E402

ALL_TASKS = "iwslt14_de_en,iwslt15_en_vi,enwik8,imdb,rt,sst2,mnist,ptb"
NAME = "xu2019"  # normlab/configs/experiment/xu2019.yaml's run name


def parse(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--scale", default="mini", help="smoke | mini | paper (default mini)")
    p.add_argument("--tasks", default=ALL_TASKS, help=f"comma-separated task keys (default {ALL_TASKS})")
    p.add_argument("--seeds", default="1,2,3", help="comma-separated seeds (default 1,2,3)")
    p.add_argument("--tables", default=",".join(TABLES), help=f"which tables (default {','.join(TABLES)})")
    p.add_argument("--norms", default=None, help="only these norms of the tables' rows (default: all)")
    p.add_argument("--jobs", type=int, default=None,
                   help="parallel jobs (default: one per core; 1 when a GPU is visible, as jobs would share it)")
    p.add_argument("--root", type=Path, default=Path.cwd() / "runs",
                   help="run root: the runs go to <root>/<commit[:12]>/ (default ./runs)")
    p.add_argument("--commit", default=None,
                   help="train at this commit (default: the commit of the copies in <out>/runs, else HEAD)")
    p.add_argument("--working-tree", action="store_true",
                   help="train from this checkout as it is, uncommitted changes included (development and "
                        "tests; reproduce.json says so), in <root>/<HEAD[:12]>-dirty when the tree is dirty")
    p.add_argument("--fresh", action="store_true",
                   help="drop the run copies in <out>/runs and re-train the grid (at --commit or HEAD)")
    p.add_argument("--out", type=Path, default=None, help="results folder (default ./results/<scale>)")
    p.add_argument(provenance.RECORD_OUT, default=None, help=provenance.RECORD_OUT_HELP)
    p.add_argument("--no-train", action="store_true", help="only report on the runs already there")
    p.add_argument("--no-figures", action="store_true")
    p.add_argument("--report-only", action="store_true",
                   help="re-write the report from <out>/runs (the committed copies); record it in reproduce.json")
    p.add_argument("overrides", nargs="*", help="extra Hydra overrides for every job (after --)")
    a = p.parse_args(argv)
    a.tasks, a.seeds = _csv(a.tasks), [int(s) for s in _csv(a.seeds)]
    unknown = [t for t in _csv(a.tables) if t not in TABLES]
    if unknown:
        p.error(f"unknown table(s) {unknown}; valid: {', '.join(TABLES)}")
    norms = list(dict.fromkeys(n for t in _csv(a.tables) for n in TABLES[t][1]))
    if a.norms:
        bad = [n for n in _csv(a.norms) if n not in norms]
        if bad:
            p.error(f"norm(s) {bad} are in none of the tables {a.tables}; their norms: {', '.join(norms)}")
        norms = [n for n in norms if n in _csv(a.norms)]
    a.norm_list = norms
    if a.jobs is None:
        import torch
        a.jobs = 1 if torch.cuda.is_available() else (os.cpu_count() or 1)
    a.base, a.out = a.root.resolve(), (a.out or Path.cwd() / "results" / a.scale).resolve()
    from normlab.tasks import TASKS
    missing = [t for t in a.tasks if t not in TASKS]
    if missing:
        p.error(f"task(s) {missing} do not exist (yet); available: {', '.join(sorted(TASKS))}")
    return a


def _csv(s: str) -> list[str]:
    return [x.strip() for x in s.split(",") if x.strip()]


def run_dir(a, task: str, norm: str, seed: int) -> Path:
    return a.root / a.scale / NAME / task / norm / f"seed{seed}"


def copy_dir(a, task: str, norm: str, seed: int) -> Path:
    return a.out / "runs" / task / norm / f"seed{seed}"


def grid(a) -> list[tuple[str, str, int]]:
    return [(t, n, s) for t in a.tasks for n in a.norm_list for s in a.seeds]


def is_final(path: Path) -> bool:
    try:
        return json.loads((path / "summary.json").read_text()).get("status") in FINAL
    except (OSError, ValueError):
        return False


def sweep_command(a) -> list[str]:
    threads = max(1, (os.cpu_count() or 1) // max(1, a.jobs))
    return [sys.executable, "-m", "normlab.train", "experiment=xu2019", f"scale={a.scale}", f"name={NAME}",
            f"task={','.join(a.tasks)}", f"norm={','.join(a.norm_list)}", f"seed={','.join(map(str, a.seeds))}",
            f"paths.root={a.root}", f"threads={threads}", "progress=false", f"hydra.launcher.n_jobs={a.jobs}",
            *a.overrides]


def report_only(a, argv) -> int:
    """The tables of a newer report from the same run copies; the runs' provenance is kept as it was."""
    runs = find_runs([a.out / "runs"])
    written = write_report(runs, a.out, figures=not a.no_figures)
    rec = json.loads((a.out / "reproduce.json").read_text())
    rec["report"] = provenance.report_stamp(len(runs), command=provenance.command("scripts/reproduce.py", argv))
    write_json(a.out / "reproduce.json", rec)
    atomic_write_bytes(a.out / "README.md", readme(rec, a.out, a.record_out).encode())
    print(written["main"].markdown())
    print(f"[reproduce] report of {len(runs)} run copies -> {a.out} (git {rec['report']['git_commit']}"
          + (", dirty" if rec["report"]["git_dirty"] else "") + ")")
    return 0


def main(argv=None) -> int:
    a = parse(argv)
    if a.report_only:
        return report_only(a, argv)
    start, started = time.time(), provenance.utc_now()
    cells, copies = grid(a), a.out / "runs"
    if a.fresh and copies.exists():
        shutil.rmtree(copies)  # the old copies stay in git history
    try:
        commit, code, dirty = pin.resolve(copies, a.commit, a.working_tree)
    except pin.PinError as e:
        print(f"[reproduce] error: {e}", file=sys.stderr)
        return 2
    a.root = pin.root_for(a.base, commit, dirty)
    restored = restore_copies(a, cells)
    todo = [c for c in cells if not is_final(run_dir(a, *c))]
    print(f"[reproduce] scale={a.scale} tasks={','.join(a.tasks)} norms={','.join(a.norm_list)} "
          f"seeds={','.join(map(str, a.seeds))} at commit {commit[:12]}: {len(cells)} runs, "
          f"{len(cells) - len(todo)} finished ({restored} from the copies in {_rel(copies)}), {len(todo)} to train")
    sweep_rc, cmd = 0, sweep_command(a)
    if todo and not a.no_train:
        try:
            code = code or pin.checkout(commit)
        except pin.PinError as e:
            print(f"[reproduce] error: {e}", file=sys.stderr)
            return 2
        print(f"[reproduce] (in {_rel(code)}) " + shlex.join(cmd), flush=True)
        progress = RunProgress([run_dir(a, *c) for c in cells], is_final)
        sweep_rc = watch(subprocess.Popen(cmd, cwd=code, env=pin.environ(code)), progress,
                         on_change=lambda: copy_finished(a, cells))
    copy_finished(a, cells)
    runs = find_runs([copies]) if copies.exists() else []
    written = write_report(runs, a.out, figures=not a.no_figures) if runs else None
    have = {(r.task, r.norm, r.seed) for r in runs}
    absent = [f"{t}/{n}/seed{s}" for t, n, s in cells if (t, n, s) not in have]
    session = provenance.session("scripts/reproduce.py", argv, started, start,
                          sweep_command=shlex.join(cmd) if todo and not a.no_train else None,
                          trained=len(todo) - len([c for c in cells if not is_final(run_dir(a, *c))]),
                          sweep_exit_status=sweep_rc)
    record = provenance.record(a.out, (f"make reproduce-table SCALE={a.scale} TASKS={','.join(a.tasks)} "
                                f"SEEDS={','.join(map(str, a.seeds))} JOBS={a.jobs}"), commit, dirty, runs,
                        {"scale": a.scale, "tasks": a.tasks, "norms": a.norm_list, "seeds": a.seeds}, session,
                        absent=absent)
    status = record["runs"]
    write_json(a.out / "reproduce.json", record)
    atomic_write_bytes(a.out / "README.md", readme(record, a.out, a.record_out).encode())
    wandb_opts = wandb_options(a.overrides)
    if wandb_opts is not None and runs:
        run_id = log_results(a.out, a.scale, NAME, wandb_opts, a.root / a.scale / "wandb", record)
        print(f"[reproduce] results logged to wandb as artifact normlab-results-{a.scale} (run {run_id})"
              if run_id else "[reproduce] results not logged to wandb (see above)")
    if written:
        print(written["main"].markdown())
    print(f"[reproduce] {len(runs)} runs ({', '.join(f'{v} {k}' for k, v in sorted(status.items()))}) -> "
          f"{a.out} in {session['wall_time_s']:.0f} s" + (f"; absent: {len(absent)}" if absent else ""))
    bad = status.get("failed", 0) + status.get("incomplete", 0) + len(absent)
    return 1 if bad or sweep_rc else 0


def restore_copies(a, cells) -> int:
    """Finished copies without a finished run directory (a fresh machine) are put back into the
    run root, where the runner skips them; returns how many."""
    n = 0
    for c in cells:
        src, dst = copy_dir(a, *c), run_dir(a, *c)
        if is_final(src) and not is_final(dst):
            for name in ("config.yaml", "summary.json", "curves.jsonl"):
                if (src / name).exists():
                    atomic_write_bytes(dst / name, (src / name).read_bytes())
            n += 1
    return n


def copy_finished(a, cells) -> None:
    """A compact copy (runs.export) of every finished run whose copy is missing or out of date."""
    for c in cells:
        export_if_changed(run_dir(a, *c), copy_dir(a, *c))


def _rel(path: Path) -> str:
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def readme(rec: dict, out: Path, shown: Optional[str] = None) -> str:
    """The results folder's README; ``shown``: the folder's name in it (--record-out), default ``out``."""
    shown = shown or _rel(out)
    sessions = rec.get("sessions") or []
    if not sessions and "machine" in rec:   # a record written before sessions were kept
        sessions = [{"command": rec.get("command"), "started_utc": rec.get("started_utc"), "machine": rec["machine"],
                     "wall_time_s": rec.get("wall_time_s", 0.0), "trained": sum(rec["runs"].values())}]
    trained = sum(x.get("trained", 0) for x in sessions)
    wall = sum(x.get("wall_time_s", 0.0) for x in sessions)
    r = rec.get("report") or {}
    lines = [
        f"# Results: scale {rec['grid']['scale']}", "",
        f"- Command: `{rec['make']}`; it trains what is missing (continuing from the run copies in "
        f"`{shown}/runs`) and re-writes these tables",
        f"- Runs trained at git commit `{rec['git_commit']}`"
        + (" with uncommitted changes (--working-tree)" if rec["git_dirty"] else " (a clean checkout)")
        + "; commits recorded by the runs: "
        + ", ".join(f"`{c[:12]}` × {n}" for c, n in rec["run_git_commits"].items()),
        f"- Tables written at git commit `{r.get('git_commit')}`" + (" (with uncommitted changes)" if r.get("git_dirty") else "")
        + f" ({r.get('utc')})",
        f"- Runs: {', '.join(f'{v} {k}' for k, v in sorted(rec['runs'].items())) or 'none'}"
        + (f"; absent (not trained yet): {len(rec['absent'])} of the grid's "
           f"{len(rec['absent']) + sum(rec['runs'].values())}" if rec["absent"] else ""),
        f"- Sum of the runs' own wall times: {rec['runs_wall_time_s'] / 3600:.2f} h; {len(sessions)} session(s) "
        f"trained {trained} run(s) in {wall / 3600:.2f} h of wall time:",
    ]
    for x in sessions:
        m = x.get("machine") or {}
        hw = f"{m.get('cpus')} × {m.get('cpu')}" + (f", GPU {m['gpu']}" if m.get("gpu") else "")
        lines.append(f"  - {x['started_utc']}: {x.get('trained', 0)} run(s) in {x['wall_time_s'] / 60:.0f} min on "
                     f"{hw}; Python {m.get('python')}, torch {m.get('torch')}; `{x['command']}`")
    lines += [f"- Re-create the tables from the copies of the runs: `normlab-report {shown}/runs --out /tmp/report`", ""]
    report = out / "report.md"
    if report.exists():
        body = report.read_text().split("\n", 1)[1]  # drop report.md's own title
        lines.append(body)
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
