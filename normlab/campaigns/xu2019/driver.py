"""The one driver of the campaign's studies (fixed, prenorm, placement, tuned): train what is missing
of a study in a time-limited slice, stage what finished, and once the study is complete promote the
copies and write its results folder (tables, reproduce.json, README).

    python -m normlab.campaigns.xu2019 --study fixed --scale mini --jobs 2 --budget-min 110

Steps: (1) pin the study to one commit (normlab.study.staging) and name its runs
<root>/<commit[:12]>/<scale>/<name>/<task>/<norm>/seed<k>; (2) a run is finished when a final
summary of that commit is in its staged copy, its run directory or the folder's committed copies;
(3) train the rest from a clean worktree of the commit (normlab.study.executor); (4) stage every
finished run (results/staging/<folder>/runs) with a record of the slice; (5) when nothing is left,
the staged copies replace the reported ones, and the report, reproduce.json and README are written.
What differs between the fixed and the tuned kind is in kinds.py; the studies in studies.py.
"""

from __future__ import annotations

import shlex
import sys
import time
from collections import Counter
from typing import Optional

from ...files import atomic_write_bytes, write_json
from ...report import find_runs, roles
from ...report import record as provenance
from ...study import pin, staging
from ...study import plan as planning
from ...study.executor import Executor
from .folder_readme import readme, rel, staged_readme
from .kinds import Fixed, cost_reference, kind_of, presets
from .request import Request, parse
from .studies import DRIVER

SCRIPT = DRIVER.removeprefix("python ")  # what a session's recorded command line starts with


def main(argv: Optional[list] = None) -> int:
    r = parse(argv)
    kind = kind_of(r)
    if r.report_only:
        return report_only(r, kind)
    return run(r, kind)


def selection_record(r: Request, kind: Fixed) -> dict:
    """What the selection seeds chose and where their runs are (reproduce.json names it)."""
    return {
        "commit": roles.declared().get("record_commit"),
        "seeds": r.seed_lists["selection"],
        "folder": f"{r.record_out}/runs" if r.record_out else rel(r.out / "runs"),
        "what": kind.selection_what,
    }


def grid_record(r: Request) -> dict:
    grid = {
        "study": r.study,
        "name": r.run_name,
        "scale": r.scale,
        "tasks": r.tasks,
        "norms": r.norms,
        "seeds": r.seeds,
        "seed_roles": r.seed_lists,
        "overrides": r.overrides,
    }
    if len(r.variants) > 1:
        grid["variants"] = r.variants
    if r.kind == "tuned":
        grid.update(factors=r.factors, extend=r.extend)
    if r.until_resolved:  # seeds were added to unresolved rows, up to max_seeds
        grid.update(until_resolved=True, max_seeds=r.max_seeds)
    if r.declaration is not None:  # a declared study adds its declared seeds at its looks
        d = r.declaration
        grid.update(
            declaration={"file": rel(d.path), "hash": d.hash},
            until_resolved=True,
            max_seeds=d["looks"][-1],
            order=list(d["seeds"]),
        )
    return grid


def report_only(r: Request, kind: Fixed) -> int:
    """The tables of a newer report from the committed copies; the runs' provenance is kept."""
    runs = find_runs([r.out / "runs"]) if (r.out / "runs").exists() else []
    if not runs:
        print(f"[{kind.tag}] nothing to report: no run copies in {rel(r.out)}/runs")
        return 0
    written = kind.write_report(runs)
    rec = provenance.read(r.out)
    if not rec:  # a folder trained before it had a driver: its record is made from its runs
        commits = [c for c, _ in Counter(x.summary.get("git_commit") for x in runs).most_common()]
        commits = [c for c in commits if c]
        rec = provenance.record(
            r.out,
            kind.make_command(),
            commits[0] if commits else "",
            False,
            runs,
            grid_record(r),
            None,
            absent=[],
            trained_by="by hand, before the study had a driver (its command: this folder's git "
            "history)",
        )
    rec["grid"].setdefault("seed_roles", r.seed_lists)
    rec.setdefault("selection_record", selection_record(r, kind))
    rec["report"] = provenance.report_stamp(len(runs), command=provenance.command(SCRIPT, r.argv))
    write_json(r.out / "reproduce.json", rec)
    atomic_write_bytes(r.out / "README.md", readme(rec, r.out, r.record_out).encode())
    print(written["main"].markdown())
    print(
        f"[{kind.tag}] report of {len(runs)} run copies -> {r.out} (git {rec['report']['git_commit']}"
        + (", dirty" if rec["report"]["git_dirty"] else "")
        + ")"
    )
    return 0


def notes(grid, jobs: list) -> list[str]:
    """Which of ``jobs``' tasks train at their own commit, not the study's; for seeds added until
    rows resolve, the rows the futility rule stopped."""
    kept = sorted({(j.task, grid.commit_of(j)[:12]) for j in jobs if grid.kept(j)})
    lines = [
        "tasks the folder keeps at their own commit train their jobs there: "
        + ", ".join(f"{t} at {c}" for t, c in kept)
    ]
    return (lines if kept else []) + grid.futility_lines()


def run(r: Request, kind: Fixed) -> int:
    start, started = time.monotonic(), provenance.utc_now()
    stage = staging.staging_dir(r.out)
    tag = kind.tag
    try:
        commit, code, dirty, source = staging.pin_study(
            r.out, r.commit, r.working_tree, r.discard_staging, r.plan, kind.shares_with
        )
    except pin.PinError as e:
        print(f"[{tag}] error: {e}", file=sys.stderr)
        return 2
    r.root = pin.root_for(r.root, commit, dirty)
    grid = kind.grid(commit, dirty, code)
    try:
        if staging.continues_folder(r.out, commit, source, bool(r.commit), r.until_resolved):
            grid.task_commits = pin.task_commits(r.out / "runs", keep=staging.trained_by_study)
        elif not dirty:
            grid.task_commits = staging.kept_tasks(r.out, commit)
    except pin.PinError as e:
        print(f"[{tag}] error: {e}", file=sys.stderr)
        return 2
    if r.declaration is not None:
        from ...study.declaration import DeclarationError, check_unchanged
        from .power_plan import unplanned

        runs = [d for j in grid.jobs() for d in grid.sources(j) if (d / "config.yaml").exists()]
        try:  # every run of the study, finished or not, wherever it is
            check_unchanged(r.declaration, runs)
        except DeclarationError as e:
            print(f"[{tag}] error: {e}", file=sys.stderr)
            return 2
        if not runs and not r.plan and (why := unplanned(r.declaration)):
            print(f"[{tag}] error: {why}", file=sys.stderr)
            return 2
    if r.plan:
        print(f"[plan] {kind.describe(commit, source, grid)}; staged in {rel(stage)}")
        if r.declaration is not None:
            from .power_plan import lines as power_lines

            print("\n".join(f"[plan] {line}" for line in power_lines(r.declaration)))
        print("\n".join(kind.plan_lines(grid)))
        for line in notes(grid, grid.plan()):
            print(f"[plan] {line}")
        return 0
    planned = grid.plan()  # reads every unfinished run's summary: once before the slice
    todo = planned or grid.unnamed
    n = len(grid.jobs())
    print(
        f"[{tag}] {kind.describe(commit, source, grid)}: {n} runs, {n - len(planned)} finished, "
        f"{len(planned)} to train"
        + (f", about {sum(grid.unnamed.values())} more named later" if grid.unnamed else ""),
        flush=True,
    )
    outcome = None
    if todo:
        try:
            grid.code = code or pin.checkout(commit)
            # a kept task's commit is checked out now: a commit missing from the clone is one line
            for job in planned:
                grid.cwd_for(job)
        except pin.PinError as e:
            print(f"[{tag}] error: {e}", file=sys.stderr)
            return 2
        if planned:
            example = shlex.join(grid.command(planned[0]))
            print(f"[{tag}] jobs run from {rel(grid.code)}, e.g. {example}")
        for line in notes(grid, planned):
            print(f"[{tag}] {line}")
        outcome = Executor(grid, r.jobs, r.budget_min, tag=tag).run()
    # A study found complete as its folder reports it is not staged again; otherwise every finished
    # run of it is staged, those found in the committed or a sibling's copies too (the promotion
    # replaces them all).
    for job in grid.jobs() if todo or stage.exists() or grid.unreported() else []:
        if grid.summary(job):
            grid.copy(job)
    left = grid.plan()
    failed = outcome.failed if outcome else []
    trained = outcome.trained if outcome else 0
    session = provenance.session(
        SCRIPT,
        r.argv,
        started,
        start,
        trained=trained,
        failed=len(failed),
        stopped=outcome.stopped if outcome else None,
    )
    selection = selection_record(r, kind)
    if left or grid.unnamed or failed:
        staged = find_runs([stage / "runs"]) if (stage / "runs").exists() else []
        reference = staged + cost_reference(r)
        hours = planning.hours_left(grid, reference, grid.unnamed, presets(r))
        record = provenance.record(
            stage,
            kind.make_command(),
            commit,
            dirty,
            staged,
            grid_record(r),
            session,
            absent=[str(j.rel()) for j in left],
            jobs_left_unnamed=sum(grid.unnamed.values()),
            job_hours_left=round(hours, 1),
            selection_record=selection,
        )
        write_json(stage / "reproduce.json", record)
        atomic_write_bytes(
            stage / "README.md",
            staged_readme(record, stage, r.study, r.scale, r.seed_lists, r.out).encode(),
        )
        print(
            f"[{tag}] {n - len(left)}/{n} runs finished ({trained} trained this slice), "
            f"{len(left)} jobs left"
            + (f" (stopped: {outcome.stopped})" if outcome and outcome.stopped else "")
            + (
                f", about {record['jobs_left_unnamed']} more once their lr is chosen"
                if grid.unnamed
                else ""
            )
            + (
                f"; {len(failed)} failed: " + ", ".join(str(j.rel()) for j in failed)
                if failed
                else ""
            )
            + (f"; about {record['job_hours_left']} h of one-thread jobs left" if left else "")
            + f"; staged copies in {rel(stage)}/runs (commit them: scripts/commit_results.sh "
            f"{rel(stage)}); the tables are written once the study is complete"
        )
        return 1 if failed else 0
    if not (r.out / "runs").exists() and not stage.exists():
        print(f"[{tag}] nothing to report: no run copies in {rel(r.out)}/runs")
        return 0
    if stage.exists():
        old, committed = provenance.read(stage), provenance.read(r.out)
        removed, added = staging.promote(r.out, r.tasks, grid.at_preset)
        if old:
            write_json(r.out / "reproduce.json", provenance.promoted(committed, old))
        print(
            f"[{tag}] study complete: {added} staged copies replace {removed} reported ones in "
            f"{rel(r.out)}/runs"
        )
    runs = find_runs([r.out / "runs"])
    written = kind.write_report(runs)
    commits = pin.task_commits(r.out / "runs", keep=staging.trained_by_study, strict=False)
    record = provenance.record(
        r.out,
        kind.make_command(),
        commit,
        dirty,
        kind.reported(runs, commits, commit),
        grid_record(r),
        session,
        absent=[],
        selection_record=selection,
        # tasks trained at other commits than this study's (those it did not re-train)
        **({"task_commits": commits} if len(set(commits.values())) > 1 else {}),
    )
    write_json(r.out / "reproduce.json", record)
    atomic_write_bytes(r.out / "README.md", readme(record, r.out, r.record_out).encode())
    log_to_wandb(r, record, bool(runs))
    print(written["main"].markdown())
    status = record["runs"]
    kept = sorted({c[:12] for c in commits.values()} - {commit[:12]})
    print(
        f"[{tag}] {len(runs)} run copies ({', '.join(f'{v} {k}' for k, v in sorted(status.items()))} at "
        f"{commit[:12]}{', tasks kept at ' + ', '.join(kept) if kept else ''}) -> {r.out} in "
        f"{session['wall_time_s']:.0f} s; {trained} trained this slice"
    )
    return 0


def log_to_wandb(r: Request, record: dict, any_runs: bool) -> None:
    from ...integrations.wandb_results import log_results, wandb_options

    opts = wandb_options(r.overrides)
    if opts is None or not any_runs:
        return
    run_id = log_results(r.out, r.scale, r.run_name, opts, r.root / r.scale / "wandb", record)
    print(
        f"[reproduce] results logged to wandb as artifact normlab-results-{r.scale} (run {run_id})"
        if run_id
        else "[reproduce] results not logged to wandb (see above)"
    )


if __name__ == "__main__":
    sys.exit(main())
