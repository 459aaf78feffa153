#!/usr/bin/env python
"""``make reproduce-table``: train what is missing of a fixed-lr study, then write results/<folder>/.

    python scripts/reproduce.py --scale mini --jobs 2 --budget-min 110      # the fixed-lr grid
    python scripts/reproduce.py --study prenorm --scale mini --plan        # the pre-norm enwik8 study
    python scripts/reproduce.py --study placement --scale mini --plan      # placement x norm

Studies (normlab/campaigns/xu2019/studies.py): ``fixed`` (the paper's tables and the beyond-the-paper norms:
tasks x norms x seeds at the preset lr, results/<scale>), ``prenorm`` (enwik8 with pre-norm,
results/<scale>-enwik8-prenorm) and ``placement`` (IWSLT14 and enwik8, four norms x six
placements, results/<scale>-placement). The seeds are the evaluation seeds by default; which seeds select
and which evaluate is declared once in normlab/configs/study/seeds.yaml, and every run records its
role (``seed_role``).

1. The study is pinned to one git commit (normlab.study.staging): that of its staged copies, else
   of a sibling study's, else --commit, else a clean HEAD. Its runs live in
   <root>/<commit[:12]>/<scale>/<name>/<task>/<norm>/seed<k> and are trained from a clean worktree
   of that commit, so every run of a table comes from the same code.
2. A run is finished when a final summary (completed or diverged) of that commit is in its staged
   copy (results/staging/<folder>/runs), its run directory or the folder's committed copies.
3. The jobs are normlab-train processes, --jobs at a time (normlab.study.executor): --budget-min
   starts none after that many minutes; SIGTERM/SIGINT stop the slice cleanly (the running jobs
   write a checkpoint); a restart resumes and never re-trains a finished run. Each finished run is
   copied to the staging folder at once, so a slice's runs can be committed while main stays green.
4. Once every run is finished, the staged copies replace the reported ones in results/<folder>/runs
   (the selection record's copies stay) and the report is written from them; reproduce.json and
   README.md record the commit, the seeds' roles and every slice (command, machine, wall time).
Exit status: 0 (also when a budget or a signal ended the slice: it says what is left), 1 when a
run failed, 2 when the study cannot be pinned.

``--plan`` prints every run of the study, which are done and where, and the hours and disk left.
``--report-only`` re-writes the tables from the committed run copies in <out>/runs (nothing is
trained or copied) and adds a "report" entry to <out>/reproduce.json.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from normlab.campaigns.xu2019.folder_readme import readme, rel, staged_readme  # noqa: E402
from normlab.campaigns.xu2019.paper_tables import TABLES  # noqa: E402
from normlab.campaigns.xu2019.studies import FIXED_STUDIES  # noqa: E402
from normlab.files import atomic_write_bytes, write_json  # noqa: E402
from normlab.integrations.wandb_results import log_results, wandb_options  # noqa: E402
from normlab.make_report import report  # noqa: E402
from normlab.report import (
    find_runs,  # noqa: E402
    roles,  # noqa: E402
)
from normlab.report import record as provenance  # noqa: E402
from normlab.study import pin, staging  # noqa: E402
from normlab.study import plan as planning  # noqa: E402
from normlab.study.executor import Executor  # noqa: E402
from normlab.study.grid import FixedGrid  # noqa: E402


def parse(argv):
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument(
        "--study",
        default="fixed",
        choices=sorted(FIXED_STUDIES),
        help="which study (default fixed)",
    )
    p.add_argument("--scale", default="mini", help="smoke | mini | paper (default mini)")
    p.add_argument("--tasks", default=None, help="comma-separated task keys (default: the study's)")
    p.add_argument(
        "--seeds", default=None, help="comma-separated seeds (default: the evaluation seeds)"
    )
    p.add_argument(
        "--selection-seeds", default=None, help="override normlab/configs/study/seeds.yaml's"
    )
    p.add_argument(
        "--evaluation-seeds", default=None, help="override normlab/configs/study/seeds.yaml's"
    )
    p.add_argument(
        "--tables", default=",".join(TABLES), help=f"which tables (default {','.join(TABLES)})"
    )
    p.add_argument(
        "--norms", default=None, help="only these norms of the tables' rows (default: all)"
    )
    p.add_argument(
        "--jobs",
        type=int,
        default=None,
        help="parallel jobs (default: one per core; 1 when a GPU is visible, as jobs would share it)",
    )
    p.add_argument(
        "--root",
        type=Path,
        default=Path.cwd() / "runs",
        help="run root: the runs go to <root>/<commit[:12]>/ (default ./runs)",
    )
    p.add_argument(
        "--commit",
        default=None,
        help="train at this commit (default: the staged copies', else HEAD)",
    )
    p.add_argument(
        "--working-tree",
        action="store_true",
        help="train from this checkout as it is, uncommitted changes included (development and "
        "tests; reproduce.json says so), in <root>/<HEAD[:12]>-dirty when the tree is dirty",
    )
    p.add_argument(
        "--discard-staging",
        type=Path,
        default=None,
        metavar="FOLDER",
        help="delete this study's staged copies first (name the folder: results/staging/<folder>)",
    )
    p.add_argument(
        "--budget-min", type=float, default=None, help="start no job after this many minutes"
    )
    p.add_argument(
        "--plan", action="store_true", help="print the runs, what is done, the hours and disk left"
    )
    p.add_argument(
        "--out",
        type=Path,
        default=None,
        help="results folder (default: the study's, results/<scale>)",
    )
    p.add_argument(provenance.RECORD_OUT, default=None, help=provenance.RECORD_OUT_HELP)
    p.add_argument("--no-train", action="store_true", help="only report on the runs already there")
    p.add_argument("--no-figures", action="store_true")
    p.add_argument(
        "--report-only",
        action="store_true",
        help="re-write the report from <out>/runs (the committed copies); record it in reproduce.json",
    )
    p.add_argument("overrides", nargs="*", help="extra Hydra overrides for every job (after --)")
    a = p.parse_args(argv)
    study = FIXED_STUDIES[a.study]
    a.name, a.make_name = study["name"], study["make"]
    a.tasks = _csv(a.tasks) if a.tasks else list(study["tasks"])
    a.overrides = [*study["overrides"], *a.overrides]
    sel = (
        [int(s) for s in _csv(a.selection_seeds)] if a.selection_seeds else roles.selection_seeds()
    )
    ev = (
        [int(s) for s in _csv(a.evaluation_seeds)]
        if a.evaluation_seeds
        else roles.evaluation_seeds()
    )
    a.seeds = [int(s) for s in _csv(a.seeds)] if a.seeds else ev
    try:
        a.roles = {s: roles.role_for_seed(s, sel, ev) for s in a.seeds}
    except ValueError as e:
        p.error(str(e))
    a.seed_lists = {"selection": sel, "evaluation": ev}
    unknown = [t for t in _csv(a.tables) if t not in TABLES]
    if unknown:
        p.error(f"unknown table(s) {unknown}; valid: {', '.join(TABLES)}")
    norms = list(
        study.get("norms") or dict.fromkeys(n for t in _csv(a.tables) for n in TABLES[t][1])
    )
    if a.norms:
        bad = [n for n in _csv(a.norms) if n not in norms]
        if bad:
            of = f"study {a.study}" if study.get("norms") else f"the tables {a.tables}"
            p.error(f"norm(s) {bad} are not in {of}; its norms: {', '.join(norms)}")
        norms = [n for n in norms if n in _csv(a.norms)]
    a.norm_list = norms
    a.variants = [list(v) for v in study.get("variants", [()])]
    if a.jobs is None:
        import torch

        a.jobs = 1 if torch.cuda.is_available() else (os.cpu_count() or 1)
    out = a.out or Path.cwd() / "results" / study["out"].format(scale=a.scale)
    a.base, a.out = a.root.resolve(), out.resolve()
    from normlab.tasks import TASKS

    missing = [t for t in a.tasks if t not in TASKS]
    if missing:
        p.error(f"task(s) {missing} do not exist (yet); available: {', '.join(sorted(TASKS))}")
    return a


def _committed(folder: Path, tasks: list[str]) -> list:
    runs = find_runs([folder / "runs"]) if (folder / "runs").exists() else []
    return [r for r in runs if r.task in tasks]


def _csv(s: str) -> list[str]:
    return [x.strip() for x in s.split(",") if x.strip()]


def report_only(a, argv) -> int:
    """The tables of a newer report from the same run copies; the runs' provenance is kept as it was."""
    runs = find_runs([a.out / "runs"])
    written = report(runs, a.out, figures=not a.no_figures, member=Path(a.record_out or a.out))
    rec = provenance.read(a.out)
    if not rec:  # a folder trained before it had a driver: its record is made from its runs
        commits = [
            c for c, _ in Counter(r.summary.get("git_commit") for r in runs).most_common() if c
        ]
        rec = provenance.record(
            a.out,
            f"{a.make_name} SCALE={a.scale}",
            commits[0] if commits else "",
            False,
            runs,
            {
                "study": a.study,
                "name": a.name,
                "scale": a.scale,
                "tasks": a.tasks,
                "norms": sorted({r.norm for r in runs}),
                "seeds": sorted({r.seed for r in runs}),
                "seed_roles": a.seed_lists,
                "overrides": a.overrides,
            },
            None,
            absent=[],
            trained_by="by hand, before the study had a driver (its command: this folder's git "
            "history)",
        )
    rec["grid"].setdefault("seed_roles", a.seed_lists)
    rec.setdefault("selection_record", selection_record(a))
    rec["report"] = provenance.report_stamp(
        len(runs), command=provenance.command("scripts/reproduce.py", argv)
    )
    write_json(a.out / "reproduce.json", rec)
    atomic_write_bytes(a.out / "README.md", readme(rec, a.out, a.record_out).encode())
    print(written["main"].markdown())
    print(
        f"[reproduce] report of {len(runs)} run copies -> {a.out} (git {rec['report']['git_commit']}"
        + (", dirty" if rec["report"]["git_dirty"] else "")
        + ")"
    )
    return 0


def selection_record(a) -> dict:
    """What the selection seeds chose and where their runs are (reproduce.json names it)."""
    return {
        "commit": roles.declared().get("record_commit"),
        "seeds": a.seed_lists["selection"],
        "folder": rel(a.out / "runs") if not a.record_out else f"{a.record_out}/runs",
        "what": "the seed(s) that calibrated the presets; never in a reported mean, test or figure",
    }


def make_command(a) -> str:
    return (
        f"{a.make_name} SCALE={a.scale} TASKS={','.join(a.tasks)} SEEDS={','.join(map(str, a.seeds))} "
        f"JOBS={a.jobs}"
    )


def build(a, commit: str, dirty: bool, code) -> FixedGrid:
    stage = staging.staging_dir(a.out)
    return FixedGrid(
        a.tasks,
        a.norm_list,
        a.seeds,
        a.variants,
        scale=a.scale,
        name=a.name,
        root=a.root,
        copies=stage / "runs",
        commit=commit,
        dirty=dirty,
        code=code,
        roles=a.roles,
        jobs_n=a.jobs,
        committed=a.out / "runs",
        overrides=a.overrides,
    )


def main(argv=None) -> int:
    a = parse(argv)
    if a.report_only:
        return report_only(a, argv)
    start, started = time.time(), provenance.utc_now()
    stage = staging.staging_dir(a.out)
    try:
        commit, code, dirty, source = staging.pin_study(
            a.out, a.commit, a.working_tree, a.discard_staging, a.plan
        )
    except pin.PinError as e:
        print(f"[reproduce] error: {e}", file=sys.stderr)
        return 2
    a.root = pin.root_for(a.base, commit, dirty)
    study = build(a, commit, dirty, code)
    if a.plan:
        print(
            f"[plan] study {a.study} ({a.name}) at commit {commit[:12]}: {len(a.tasks)} tasks x "
            f"{len(a.norm_list)} norms x "
            + (f"{len(a.variants)} variants x " if len(a.variants) > 1 else "")
            + f"seeds {','.join(map(str, a.seeds))} "
            f"({', '.join(f'{s}: {r}' for s, r in a.roles.items())}); staged in {rel(stage)}; the commit is "
            f"{source}"
        )
        # a study with no runs yet is costed by the fixed study's runs of its tasks at this scale
        folders = [a.out, a.out.parent / FIXED_STUDIES["fixed"]["out"].format(scale=a.scale)]
        committed = next((runs for f in folders if (runs := _committed(f, a.tasks))), [])
        print("\n".join(planning.lines(study, reference=committed)))
        return 0
    todo = study.plan()
    n = len(study.jobs())
    print(
        f"[reproduce] study {a.study}: scale={a.scale} tasks={','.join(a.tasks)} norms={','.join(a.norm_list)} "
        f"seeds={','.join(map(str, a.seeds))} at commit {commit[:12]} ({source}): {n} runs, {n - len(todo)} "
        f"finished, {len(todo)} to train",
        flush=True,
    )
    outcome = None
    if todo and not a.no_train:
        try:
            study.code = code or pin.checkout(commit)
        except pin.PinError as e:
            print(f"[reproduce] error: {e}", file=sys.stderr)
            return 2
        print(
            f"[reproduce] jobs run from {rel(study.code)}, e.g. "
            + shlex.join(study.command(todo[0])),
            flush=True,
        )
        outcome = Executor(study, a.jobs, a.budget_min, tag="reproduce").run()
    # A study found complete as its folder reports it is not staged again; otherwise every finished
    # run of it is staged, those found in the committed copies too (the promotion replaces them all).
    for job in study.jobs() if todo or stage.exists() else []:
        if study.summary(job):
            study.copy(job)
    left = study.plan()
    session = provenance.session(
        "scripts/reproduce.py",
        argv,
        started,
        start,
        trained=outcome.trained if outcome else 0,
        failed=len(outcome.failed) if outcome else 0,
        stopped=outcome.stopped if outcome else None,
    )
    grid = {
        "study": a.study,
        "name": a.name,
        "scale": a.scale,
        "tasks": a.tasks,
        "norms": a.norm_list,
        "seeds": a.seeds,
        "seed_roles": a.seed_lists,
        "overrides": a.overrides,
        **({"variants": a.variants} if len(a.variants) > 1 else {}),
    }
    selection = selection_record(a)
    failed = outcome.failed if outcome else []
    if (left or failed) and not a.no_train:
        staged = find_runs([stage / "runs"]) if (stage / "runs").exists() else []
        record = provenance.record(
            stage,
            make_command(a),
            commit,
            dirty,
            staged,
            grid,
            session,
            absent=[str(j.rel()) for j in left],
            selection_record=selection,
        )
        write_json(stage / "reproduce.json", record)
        atomic_write_bytes(stage / "README.md", staged_readme(record, stage, a).encode())
        done = n - len(left)
        print(
            f"[reproduce] {done}/{n} runs finished, {len(left)} left"
            + (f" (stopped: {outcome.stopped})" if outcome and outcome.stopped else "")
            + (
                f"; {len(failed)} failed: " + ", ".join(str(j.rel()) for j in failed)
                if failed
                else ""
            )
            + f"; staged copies in {rel(stage)}/runs (commit them: scripts/commit_results.sh {rel(stage)}); "
            f"the tables are written once the study is complete"
        )
        return 1 if failed else 0
    if not (a.out / "runs").exists() and not stage.exists():
        print(f"[reproduce] nothing to report: no run copies in {rel(a.out)}/runs")
        return 0
    if stage.exists() and not left and not a.no_train:
        old = provenance.read(stage)
        removed, added = staging.promote(a.out)
        if old:
            write_json(a.out / "reproduce.json", old)
        print(
            f"[reproduce] study complete: {added} staged copies replace {removed} reported ones in {rel(a.out)}/runs"
        )
    runs = find_runs([a.out / "runs"])
    written = report(runs, a.out, figures=not a.no_figures, member=Path(a.record_out or a.out))
    record = provenance.record(
        a.out,
        make_command(a),
        commit,
        dirty,
        [r for r in runs if r.summary.get("git_commit") == commit],
        grid,
        session,
        absent=[],
        selection_record=selection,
    )
    write_json(a.out / "reproduce.json", record)
    atomic_write_bytes(a.out / "README.md", readme(record, a.out, a.record_out).encode())
    wandb_opts = wandb_options(a.overrides)
    if wandb_opts is not None and runs:
        run_id = log_results(a.out, a.scale, a.name, wandb_opts, a.root / a.scale / "wandb", record)
        print(
            f"[reproduce] results logged to wandb as artifact normlab-results-{a.scale} (run {run_id})"
            if run_id
            else "[reproduce] results not logged to wandb (see above)"
        )
    print(written["main"].markdown())
    status = record["runs"]
    print(
        f"[reproduce] {len(runs)} run copies ({', '.join(f'{v} {k}' for k, v in sorted(status.items()))} at "
        f"{commit[:12]}) -> {a.out} in {session['wall_time_s']:.0f} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
