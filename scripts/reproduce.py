#!/usr/bin/env python
"""``make reproduce-table``: train what is missing of the paper's grid, then write results/<scale>/.

    python scripts/reproduce.py --scale mini --tasks rt,sst2 --seeds 1,2,3 --jobs 2

1. The grid is tasks x (the norms of the chosen tables) x seeds. Runs live in
   <root>/<scale>/xu2019/<task>/<norm>/seed<k>, shared by every table.
2. If any run of the grid has no final summary (completed or diverged), one Hydra sweep
   (normlab/configs/experiment/xu2019.yaml: joblib launcher, --jobs jobs, cores/jobs torch threads each)
   runs the grid: the runner skips finished runs and resumes interrupted or failed ones.
3. The grid's runs are copied, compactly (runs.export), to <out>/runs/, and the report
   (normlab.report.write_report) is written from those copies, so `normlab-report <out>/runs
   --out DIR` re-creates the committed tables exactly.
4. <out>/reproduce.json and <out>/README.md record the exact command, git commit, machine, wall
   time, and what the report says.
Exit status: 0, or 1 when a run of the grid failed or is missing (the report is written anyway).

``--report-only`` re-writes the tables from the committed run copies in <out>/runs (nothing is
trained or copied) and adds a "report" entry (command, git commit, dirty flag, time) to
<out>/reproduce.json, whose other fields keep describing the command that produced the runs.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from normlab.integrations.wandb_results import log_results, wandb_options  # noqa: E402
from normlab.progress import RunProgress, watch  # noqa: E402
from normlab.report import find_runs, load_run, write_report  # noqa: E402
from normlab.report.paper_tables import TABLES  # noqa: E402
from normlab.report.runs import FINAL, export  # noqa: E402
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
    p.add_argument("--root", type=Path, default=Path.cwd() / "runs", help="run root (default ./runs)")
    p.add_argument("--out", type=Path, default=None, help="results folder (default ./results/<scale>)")
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
    a.root, a.out = a.root.resolve(), (a.out or Path.cwd() / "results" / a.scale).resolve()
    from normlab.tasks import TASKS
    missing = [t for t in a.tasks if t not in TASKS]
    if missing:
        p.error(f"task(s) {missing} do not exist (yet); available: {', '.join(sorted(TASKS))}")
    return a


def _csv(s: str) -> list[str]:
    return [x.strip() for x in s.split(",") if x.strip()]


def run_dir(a, task: str, norm: str, seed: int) -> Path:
    return a.root / a.scale / NAME / task / norm / f"seed{seed}"


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


def git(*args) -> str:
    try:
        return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True, timeout=10).stdout.strip()
    except Exception:
        return ""


def machine() -> dict:
    info = {"hostname": platform.node(), "platform": platform.platform(), "python": platform.python_version(),
            "cpus": os.cpu_count()}
    try:
        cpu = [ln.split(":", 1)[1].strip() for ln in open("/proc/cpuinfo") if ln.startswith("model name")]
        info["cpu"] = cpu[0] if cpu else platform.processor()
        mem = [ln.split()[1] for ln in open("/proc/meminfo") if ln.startswith("MemTotal")]
        info["memory_gb"] = round(int(mem[0]) / 2**20, 1) if mem else None
    except OSError:
        info["cpu"] = platform.processor()
    import torch
    info["torch"] = torch.__version__
    info["gpu"] = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    return info


def report_only(a, argv) -> int:
    """The tables of a newer report from the same run copies; the runs' provenance is kept as it was."""
    # The tree's state before this command writes its own outputs (which dirty it by design).
    commit, dirty = git("rev-parse", "HEAD") or None, bool(git("status", "--porcelain", "--untracked-files=no"))
    runs = find_runs([a.out / "runs"])
    written = write_report(runs, a.out, figures=not a.no_figures)
    rec = json.loads((a.out / "reproduce.json").read_text())
    rec["report"] = {
        "command": shlex.join(["python", "scripts/reproduce.py", *(sys.argv[1:] if argv is None else argv)]),
        "git_commit": commit, "git_dirty": dirty,
        "utc": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"), "runs": len(runs)}
    write_json(a.out / "reproduce.json", rec)
    atomic_write_bytes(a.out / "README.md", readme(rec, a.out).encode())
    print(written["main"].markdown())
    print(f"[reproduce] report of {len(runs)} run copies -> {a.out} (git {rec['report']['git_commit']}"
          + (", dirty" if rec["report"]["git_dirty"] else "") + ")")
    return 0


def main(argv=None) -> int:
    a = parse(argv)
    if a.report_only:
        return report_only(a, argv)
    start, started = time.time(), dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    cells = grid(a)
    todo = [c for c in cells if not is_final(run_dir(a, *c))]
    print(f"[reproduce] scale={a.scale} tasks={','.join(a.tasks)} norms={','.join(a.norm_list)} "
          f"seeds={','.join(map(str, a.seeds))}: {len(cells)} runs, {len(cells) - len(todo)} finished, "
          f"{len(todo)} to train")
    sweep_rc, cmd = 0, sweep_command(a)
    if todo and not a.no_train:
        print("[reproduce] " + shlex.join(cmd), flush=True)
        progress = RunProgress([run_dir(a, *c) for c in cells], is_final)
        sweep_rc = watch(subprocess.Popen(cmd, cwd=REPO), progress)
    present = [run_dir(a, *c) for c in cells if _exists(run_dir(a, *c))]
    absent = [f"{t}/{n}/seed{s}" for t, n, s in cells if not _exists(run_dir(a, t, n, s))]
    runs_out = a.out / "runs"
    if runs_out.exists():
        shutil.rmtree(runs_out)  # results/<scale>/runs holds exactly this grid's runs
    for path in present:
        export(load_run(path), runs_out / path.relative_to(a.root / a.scale / NAME))
    runs = find_runs([runs_out]) if present else []
    written = write_report(runs, a.out, figures=not a.no_figures) if runs else None
    status = {}
    for r in runs:
        status[r.status] = status.get(r.status, 0) + 1
    record = {
        "command": shlex.join(["python", "scripts/reproduce.py", *(sys.argv[1:] if argv is None else argv)]),
        "make": (f"make reproduce-table SCALE={a.scale} TASKS={','.join(a.tasks)} "
                 f"SEEDS={','.join(map(str, a.seeds))} JOBS={a.jobs}"),
        "sweep_command": shlex.join(cmd) if todo and not a.no_train else None,
        "git_commit": git("rev-parse", "HEAD") or None,
        "git_dirty": bool(git("status", "--porcelain", "--untracked-files=no")),
        "run_git_commits": _count(r.summary.get("git_commit") for r in runs),
        "machine": machine(), "data_dir": os.environ.get("NORMLAB_DATA"),
        "started_utc": started, "wall_time_s": round(time.time() - start, 1),
        "runs_wall_time_s": round(sum(r.summary.get("wall_time_s", 0.0) for r in runs), 1),
        "grid": {"scale": a.scale, "tasks": a.tasks, "norms": a.norm_list, "seeds": a.seeds},
        "runs": status, "absent": absent, "sweep_exit_status": sweep_rc,
    }
    write_json(a.out / "reproduce.json", record)
    atomic_write_bytes(a.out / "README.md", readme(record, a.out).encode())
    wandb_opts = wandb_options(a.overrides)
    if wandb_opts is not None and runs:
        run_id = log_results(a.out, a.scale, NAME, wandb_opts, a.root / a.scale / "wandb", record)
        print(f"[reproduce] results logged to wandb as artifact normlab-results-{a.scale} (run {run_id})"
              if run_id else "[reproduce] results not logged to wandb (see above)")
    if written:
        print(written["main"].markdown())
    print(f"[reproduce] {len(runs)} runs ({', '.join(f'{v} {k}' for k, v in sorted(status.items()))}) -> "
          f"{a.out} in {record['wall_time_s']:.0f} s" + (f"; absent: {', '.join(absent)}" if absent else ""))
    bad = status.get("failed", 0) + status.get("incomplete", 0) + len(absent)
    return 1 if bad or sweep_rc else 0


def _exists(path: Path) -> bool:
    return (path / "summary.json").exists() or (path / "config.yaml").exists()


def _rel(path: Path) -> str:
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _count(xs) -> dict:
    out: dict = {}
    for x in xs:
        out[str(x)] = out.get(str(x), 0) + 1
    return out


def readme(rec: dict, out: Path) -> str:
    m = rec["machine"]
    hw = f"{m.get('cpus')} × {m.get('cpu')}" + (f", GPU {m['gpu']}" if m.get("gpu") else "") + \
        (f", {m['memory_gb']} GB RAM" if m.get("memory_gb") else "")
    lines = [
        f"# Results: scale {rec['grid']['scale']}", "",
        f"- Command: `{rec['make']}` (runs `{rec['command']}`)",
        f"- Git commit: `{rec['git_commit']}`" + (" (with uncommitted changes)" if rec["git_dirty"] else ""),
        f"- Machine: {hw}; {m.get('platform')}; Python {m.get('python')}, torch {m.get('torch')}",
        f"- Wall time of this command: {rec['wall_time_s'] / 3600:.2f} h (started {rec['started_utc']}); "
        f"sum of the runs' own wall times: {rec['runs_wall_time_s'] / 3600:.2f} h",
        f"- Runs: {', '.join(f'{v} {k}' for k, v in sorted(rec['runs'].items())) or 'none'}"
        + (f"; absent (never started): {', '.join(rec['absent'])}" if rec["absent"] else ""),
        f"- Re-create the tables from the copies of the runs: `normlab-report {_rel(out)}/runs --out /tmp/report`", "",
    ]
    if rec.get("report"):
        r = rec["report"]
        lines[-1:-1] = [f"- Tables last re-written from these run copies by `{r['command']}` at git commit "
                        f"`{r['git_commit']}`" + (" (with uncommitted changes)" if r["git_dirty"] else "")
                        + f" ({r['utc']}); the runs themselves come from the commits in reproduce.json's "
                        "run_git_commits"]
    report = out / "report.md"
    if report.exists():
        body = report.read_text().split("\n", 1)[1]  # drop report.md's own title
        lines.append(body)
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
