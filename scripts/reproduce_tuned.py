#!/usr/bin/env python
"""``make reproduce-tuned``: every norm at its own learning rate, then results/<scale>-tuned/.

    python scripts/reproduce_tuned.py --scale mini --jobs 2 --budget-min 110
    python scripts/reproduce_tuned.py --scale mini --plan

Protocol (normlab/campaigns/xu2019/tuned.py; the jobs: normlab/campaigns/xu2019/tuned_grid.py): per task and norm, the
selection seed (normlab/configs/study/seeds.yaml: seed 1) at the preset lr and at the factors of
normlab/configs/hparams_search/lr_grid.yaml (five lrs spanning 8x); the lr with the best
validation score is chosen (the grid widened by 2x steps, --extend per side, while the best sits
at its edge); then the evaluation seeds at that lr and at the preset lr (the fixed-lr comparison,
whose runs the fixed-lr study shares). Jobs are scheduled task by task, so a partial grid has whole
tasks. The selection already made (the committed seed-1 runs) is read, not re-trained, and no
reported mean or test contains a selection run.

Like ``make reproduce-table`` (scripts/reproduce.py) the study is pinned to one commit
(normlab.study.staging: the staged studies', else --commit, else a clean HEAD) and trained from a
clean worktree of it, in time-limited slices (normlab.study.executor: --budget-min, a clean stop on
SIGTERM/SIGINT, no re-training on restart). Finished runs are staged in
results/staging/<scale>-tuned/runs; once the study is complete they replace the reported copies.
Exit status: 0 (also when jobs are left: it says how many), 1 when a job failed, 2 when the study
cannot be pinned.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import fields
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from normlab.campaigns.xu2019.tuned import EXTEND, TUNED_NORMS, recorded_extend, write_tuned_report  # noqa: E402
from normlab.campaigns.xu2019.tuned_grid import Grid, Plan  # noqa: E402
from normlab.files import atomic_write_bytes, write_json  # noqa: E402
from normlab.report import (
    find_runs,  # noqa: E402
    roles,  # noqa: E402
)
from normlab.report import record as provenance  # noqa: E402
from normlab.study import pin, staging  # noqa: E402
from normlab.study import plan as planning  # noqa: E402
from normlab.study.executor import Executor  # noqa: E402
from normlab.tune import load_search  # noqa: E402

ALL_TASKS = "rt,sst2,mnist,iwslt15_en_vi,iwslt14_de_en,enwik8,ptb,imdb"  # cheapest first


def _ints(s):
    return [int(x) for x in s.split(",") if x.strip()] if s else None


def parse(argv):
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--scale", default="mini")
    p.add_argument("--tasks", default=ALL_TASKS, help=f"in priority order (default {ALL_TASKS})")
    p.add_argument("--norms", default=",".join(TUNED_NORMS))
    p.add_argument(
        "--selection-seeds",
        default=None,
        help="the first chooses the lr (default: normlab/configs/study/seeds.yaml's selection)",
    )
    p.add_argument(
        "--evaluation-seeds",
        default=None,
        help="trained at the chosen and at the preset lr (default: seeds.yaml's evaluation)",
    )
    p.add_argument("--search", default="lr_grid", help="hparams_search preset with the lr factors")
    p.add_argument(
        "--extend",
        type=int,
        default=None,
        help="widen the grid by at most this many 2x steps past an edge choice (default: the "
        f"results' own, from their reproduce.json, else {EXTEND})",
    )
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    p.add_argument("--root", type=Path, default=Path.cwd() / "runs")
    p.add_argument("--out", type=Path, default=None, help="default ./results/<scale>-tuned")
    p.add_argument(provenance.RECORD_OUT, default=None, help=provenance.RECORD_OUT_HELP)
    p.add_argument(
        "--commit",
        default=None,
        help="train at this commit (default: the staged studies', else HEAD)",
    )
    p.add_argument(
        "--working-tree",
        action="store_true",
        help="train from this checkout as it is (development and tests; see scripts/reproduce.py)",
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
        "--no-train", action="store_true", help="only re-write the report from the copies"
    )
    p.add_argument("--no-figures", action="store_true")
    a = p.parse_args(argv)
    a.tasks, a.norms = a.tasks.split(","), a.norms.split(",")
    a.out = (a.out or Path.cwd() / "results" / f"{a.scale}-tuned").resolve()
    recorded = (provenance.read(a.out).get("grid") or {}).get("seed_roles") or {}
    sel = _ints(a.selection_seeds) or recorded.get("selection") or roles.selection_seeds()
    ev = _ints(a.evaluation_seeds) or recorded.get("evaluation") or roles.evaluation_seeds()
    try:
        a.roles = {s: roles.role_for_seed(s, sel, ev) for s in (*sel, *ev)}
    except ValueError as e:
        p.error(str(e))
    a.select_seed, a.eval_seeds, a.seed_lists = sel[0], ev, {"selection": sel, "evaluation": ev}
    a.factors = [
        float(f) for f in load_search(a.search)["params"]["task.train.lr"]["factor_choices"]
    ]
    if a.extend is None:  # a grid keeps its widening rule across sessions and report-only passes
        a.extend = recorded_extend(a.out)
    return a


def main(argv=None) -> int:
    a = parse(argv)
    start, started = time.time(), provenance.utc_now()
    stage = staging.staging_dir(a.out)
    try:
        commit, code, dirty, source = staging.pin_study(
            a.out,
            a.commit,
            a.working_tree,
            a.discard_staging,
            a.plan,
            shares_with=(a.out.parent / a.scale,),
        )
    except pin.PinError as e:
        print(f"[tuned] error: {e}", file=sys.stderr)
        return 2
    a.root = pin.root_for(a.root.resolve(), commit, dirty)
    g = Grid(Plan(**{f.name: getattr(a, f.name) for f in fields(Plan)}), code, commit, dirty)
    print(
        f"[tuned] scale={a.scale} tasks={','.join(a.tasks)} norms={','.join(a.norms)} at commit {commit[:12]} "
        f"({source}); "
        f"lr factors {', '.join(f'{f:g}' for f in sorted({1.0, *a.factors}))}; selection seed {a.select_seed}, "
        f"evaluation seeds {','.join(map(str, a.eval_seeds))}",
        flush=True,
    )
    if a.plan:
        committed = find_runs([a.out / "runs"]) if (a.out / "runs").exists() else []
        print(
            "\n".join(
                planning.lines(
                    g,
                    reference=committed,
                    unnamed=g.unnamed,
                    shared_note="with the fixed-lr study (its preset-lr runs)",
                )
            )
        )
        return 0
    outcome = None
    todo = g.plan() or g.unnamed
    if not a.no_train and todo:
        try:
            g.code = code or pin.checkout(commit)
        except pin.PinError as e:
            print(f"[tuned] error: {e}", file=sys.stderr)
            return 2
        outcome = Executor(g, a.jobs, a.budget_min, tag="tuned").run()
    # staged: every finished run of a partial study, those another study trained (its preset-lr runs) too
    for job in g.jobs() if not a.no_train and (todo or stage.exists()) else []:
        if g.summary(job):
            g.copy(job)
    left = g.plan()
    failed = outcome.failed if outcome else []
    grid = {
        "study": "tuned",
        "scale": a.scale,
        "tasks": a.tasks,
        "norms": a.norms,
        "seeds": [a.select_seed, *a.eval_seeds],
        "seed_roles": a.seed_lists,
        "factors": a.factors,
        "extend": a.extend,
    }
    session = (
        None
        if a.no_train
        else provenance.session(
            "scripts/reproduce_tuned.py",
            argv,
            started,
            start,
            trained=outcome.trained if outcome else 0,
            failed=len(failed),
            stopped=outcome.stopped if outcome else None,
        )
    )
    selection = {
        "commit": roles.declared().get("record_commit"),
        "seeds": a.seed_lists["selection"],
        "folder": f"{a.record_out or a.out.name}/runs",
        "what": "seed 1 at every lr of the grid: it chose each norm's lr; never in a reported mean or test",
    }
    complete = not left and not g.unnamed and not failed
    if not complete and not a.no_train:
        staged = find_runs([stage / "runs"]) if (stage / "runs").exists() else []
        committed = find_runs([a.out / "runs"]) if (a.out / "runs").exists() and not staged else []
        record = provenance.record(
            stage,
            f"make reproduce-tuned SCALE={a.scale}",
            commit,
            dirty,
            staged,
            grid,
            session,
            jobs_left=len(left),
            jobs_left_unnamed=sum(g.unnamed.values()),
            job_hours_left=round(planning.hours_left(g, staged or committed, g.unnamed), 1),
            selection_record=selection,
        )
        write_json(stage / "reproduce.json", record)
        atomic_write_bytes(
            stage / "README.md",
            (
                f"# Staged runs: tuned comparison, scale {a.scale} (partial)\n\nRuns at commit `{commit}`: "
                + (", ".join(f"{v} {k}" for k, v in sorted(record["runs"].items())) or "none")
                + f"; {len(left)} jobs left, about {record['jobs_left_unnamed']} more once their lr is chosen. No table is "
                f"written until the study is complete; then these copies replace the reported ones in {a.out.name}/runs.\n"
            ).encode(),
        )
        print(
            f"[tuned] {outcome.trained if outcome else 0} trained this slice, {len(failed)} failed; {len(staged)} "
            f"staged copies; {len(left)} jobs left"
            + (f" (stopped: {outcome.stopped})" if outcome and outcome.stopped else "")
            + (
                f"; about {record['jobs_left_unnamed']} more once their lr is chosen"
                if g.unnamed
                else ""
            )
            + (f"; about {record['job_hours_left']} h of one-thread jobs left" if left else "")
            + f"; commit them: scripts/commit_results.sh {stage}"
        )
        return 1 if failed else 0
    if complete and stage.exists() and not a.no_train:
        old = provenance.read(stage)
        removed, added = staging.promote(a.out)
        if old:
            write_json(a.out / "reproduce.json", old)
        print(
            f"[tuned] study complete: {added} staged copies replace {removed} reported ones in {a.out}/runs"
        )
    runs = find_runs([a.out / "runs"]) if (a.out / "runs").exists() else []
    written = (
        write_tuned_report(
            runs,
            a.out,
            a.factors,
            figures=not a.no_figures,
            extend=a.extend,
            member=Path(a.record_out or a.out),
        )
        if runs
        else None
    )
    old = provenance.read(a.out)
    record = provenance.record(
        a.out,
        f"make reproduce-tuned SCALE={a.scale}",
        old.get("git_commit", commit),
        old.get("git_dirty", dirty),
        runs,
        {"seed_roles": a.seed_lists, **(old.get("grid") or grid)},
        session if complete and not a.no_train else None,
        report_command=provenance.command("scripts/reproduce_tuned.py", argv)
        if a.no_train
        else None,
        jobs_left=0 if complete else old.get("jobs_left", len(left)),
        jobs_left_unnamed=0 if complete else old.get("jobs_left_unnamed", 0),
        job_hours_left=0.0 if complete else old.get("job_hours_left", 0.0),
        selection_record=selection,
    )
    status = record["runs"]
    write_json(a.out / "reproduce.json", record)
    if written:
        hours = record["runs_wall_time_s"] / 3600
        head = [
            f"# Tuned comparison: scale {a.scale}",
            "",
            f"- Command: `{record['make']}` (continues from the copies in runs/); runs trained at git commit "
            f"`{record['git_commit']}` ({'uncommitted changes, --working-tree' if record['git_dirty'] else 'clean checkout'}); "
            f"tables written at `{record['report']['git_commit']}`",
            f"- Runs: {', '.join(f'{v} {k}' for k, v in sorted(status.items()))}; jobs still to run: "
            f"{record['jobs_left']} named, about {record['jobs_left_unnamed']} more once their lr is chosen; "
            f"sum of the runs' own wall times {hours:.2f} h over {len(record['sessions'])} session(s)",
            "",
        ]
        body = (a.out / "report.md").read_text().split("\n", 1)[1]
        atomic_write_bytes(a.out / "README.md", ("\n".join(head) + body).encode())
        print(written["main"].markdown())
    print(
        f"[tuned] {outcome.trained if outcome else 0} trained this slice, {len(failed)} failed; {len(runs)} run copies"
        f" in {a.out.name}/runs" + ("; study complete" if complete else "")
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
