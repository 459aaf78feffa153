"""The README of a study's results folder (and of its staging folder while the study is partial),
written from its reproduce.json record: what was trained, at which commit, by which sessions, and
the report's tables."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from .findings import added_seeds
from .studies import STUDIES


def rel(path: Path) -> str:
    """``path`` relative to the working directory where it lies below it."""
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def own_evaluation(rec: dict) -> list:
    """The study's own evaluation seeds (the placement study runs 2-4 of the declared 2-6)."""
    roles_ = rec["grid"].get("seed_roles") or {}
    return [s for s in rec["grid"].get("seeds") or [] if s in (roles_.get("evaluation") or [])]


def added_seeds_text(rec: dict) -> str:
    """The seeds a study added to its unresolved rows after the first look (--until-resolved)."""
    grid = rec.get("grid") or {}
    if not grid.get("until_resolved"):
        return ""
    first, most = grid.get("seeds") or [], int(grid["max_seeds"])
    declared = grid.get("order")  # a declaration's seeds, in the order it adds them
    added = declared[len(first) : most] if declared else added_seeds(first, most)
    if not added:
        return ""
    how = "as declared" if declared else "--until-resolved"
    return (
        f", then {added[0]}-{added[-1]} for the norms of the primary rows a look left unresolved "
        f"({how}, up to {most} seeds; each row's n in findings.md)"
    )


def staged_readme(
    rec: dict, stage: Path, study: str, scale: str, seed_lists: dict, out: Path
) -> str:
    more = rec.get("jobs_left_unnamed") or 0
    return (
        "\n".join(
            [
                f"# Staged runs: study {study}, scale {scale} (partial)",
                "",
                f"Runs of `{rec['make']}` at commit `{rec['git_commit']}`, finished so far: "
                + (", ".join(f"{v} {k}" for k, v in sorted(rec["runs"].items())) or "none")
                + f"; {len(rec['absent'])} left"
                + (f", about {more} more once their lr is chosen" if more else "")
                + ". No table is written until the study is complete; then these copies "
                f"replace the reported ones in `{rel(out)}/runs`.",
                f"- Look at them meanwhile: `normlab-report {rel(stage)}/runs --campaign xu2019 --out /tmp/partial`",
                f"- Continue: `{rec['make']}` (or `make grid-start STUDY={study}`)",
                f"- Seeds: selection {seed_lists['selection']}, evaluation "
                f"{own_evaluation(rec) or seed_lists['evaluation']} (normlab/configs/study/seeds.yaml)",
                "",
            ]
        )
        + "\n"
    )


def readme(rec: dict, out: Path, shown: Optional[str] = None) -> str:
    """The results folder's README; ``shown``: the folder's name in it (--record-out), default ``out``."""
    shown = shown or rel(out)
    absent = rec.get("absent") or []  # records of the tuned study's former driver have none
    sessions = rec.get("sessions") or []
    if not sessions and "machine" in rec:  # a record written before sessions were kept
        sessions = [
            {
                "command": rec.get("command"),
                "started_utc": rec.get("started_utc"),
                "machine": rec["machine"],
                "wall_time_s": rec.get("wall_time_s", 0.0),
                "trained": sum(rec["runs"].values()),
            }
        ]
    trained = sum(x.get("trained", 0) for x in sessions)
    wall = sum(x.get("wall_time_s", 0.0) for x in sessions)
    r = rec.get("report") or {}
    study = STUDIES.get(rec["grid"].get("study", "fixed"), {})
    roles_ = rec["grid"].get("seed_roles") or {}
    evaluation = own_evaluation(rec)
    # what the selection seeds chose, as the study records it: the tuned study's lr-grid table and
    # figure show their validation scores, so "in no table" would not hold there
    chose = (rec.get("selection_record") or {}).get("what") or (
        "they chose the presets and the lrs; never in a reported mean or test"
    )
    lines = [
        f"# Results: scale {rec['grid']['scale']}"
        + (f", {study['title']}" if study.get("title") else ""),
        "",
        *([study["about"], ""] if study.get("about") else []),
        *(
            [
                f"- Seeds: selection {roles_.get('selection')} ({chose}), evaluation "
                f"{evaluation or roles_.get('evaluation')}{added_seeds_text(rec)} "
                "(normlab/configs/study/seeds.yaml)"
            ]
            if roles_
            else []
        ),
        f"- Command: `{rec['make']}`; it trains what is missing (continuing from the run copies in "
        f"`{shown}/runs`) and re-writes these tables",
        *([f"- Trained {rec['trained_by']}"] if rec.get("trained_by") else []),
        f"- Runs trained at git commit `{rec['git_commit']}`"
        + (
            " with uncommitted changes (--working-tree)"
            if rec["git_dirty"]
            else " (a clean checkout)"
        )
        + "; commits recorded by the runs: "
        + ", ".join(f"`{c[:12]}` × {n}" for c, n in rec["run_git_commits"].items()),
        *(
            [
                "- Each task's runs share one commit (a row never mixes two): "
                + ", ".join(f"{t} `{c[:12]}`" for t, c in rec["task_commits"].items())
                + "; re-create a task's runs with `--tasks TASK --commit COMMIT`"
            ]
            if rec.get("task_commits")
            else []
        ),
        f"- Tables written at git commit `{r.get('git_commit')}`"
        + (" (with uncommitted changes)" if r.get("git_dirty") else "")
        + f" ({r.get('utc')})",
        f"- Runs: {', '.join(f'{v} {k}' for k, v in sorted(rec['runs'].items())) or 'none'}"
        + (
            f"; absent (not trained yet): {len(absent)} of the grid's "
            f"{len(absent) + sum(rec['runs'].values())}"
            if absent
            else ""
        ),
        f"- Sum of the runs' own wall times: {rec['runs_wall_time_s'] / 3600:.2f} h; {len(sessions)} session(s) "
        f"trained {trained} run(s) in {wall / 3600:.2f} h of wall time:",
    ]
    for x in sessions:
        m = x.get("machine") or {}
        hw = f"{m.get('cpus')} × {m.get('cpu')}" + (f", GPU {m['gpu']}" if m.get("gpu") else "")
        lines.append(
            f"  - {x['started_utc']}: {x.get('trained', 0)} run(s) in {x['wall_time_s'] / 60:.0f} min on "
            f"{hw}; Python {m.get('python')}, torch {m.get('torch')}; `{x['command']}`"
        )
    lines += [
        f"- Re-create the tables from the copies of the runs: `normlab-report {shown}/runs --campaign xu2019 --out /tmp/report`",
        "",
    ]
    report = out / "report.md"
    if report.exists():
        body = report.read_text().split("\n", 1)[1]  # drop report.md's own title
        lines.append(body)
    return "\n".join(lines) + "\n"
