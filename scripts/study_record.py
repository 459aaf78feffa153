"""What a results folder's study took and gave, one Markdown row per folder, from its committed
record and tables: the run copies by status, the cells that did not train, the commits the runs
were trained at, the one-thread job hours and the slices (driver sessions) with their wall hours.

    python scripts/study_record.py results/mini results/mini-tuned results/mini-enwik8-prenorm

Read from reproduce.json (runs, run_git_commits, runs_wall_time_s, sessions) and the folder's
main table (summary.csv, or tuned.csv for the tuned study): a cell marked "did not train" there
is named. Exit 2 for a folder without a reproduce.json.
"""

from __future__ import annotations

import csv
import json
import re
import sys
from pathlib import Path
from typing import Optional

UNTRAINED = re.compile(r"\(\d+\); did not train")
STATUSES = ("completed", "diverged", "failed")


def untrained(folder: Path) -> list[str]:
    """The cells of the folder's main table marked "did not train": "task norm" (and, in the
    tuned table, which lr's cell)."""
    path = next((folder / n for n in ("tuned.csv", "summary.csv") if (folder / n).exists()), None)
    if path is None:
        return []
    tuned = path.name == "tuned.csv"
    rows = list(csv.reader(path.read_text().splitlines()))
    header, cells = rows[0], []
    for row in (r for r in rows[1:] if r and r[0] != "caption"):
        for col, cell in zip(header, row):
            if not UNTRAINED.search(cell):
                continue
            if tuned:  # task, norm, chosen lr, fixed lr: ..., own lr: ...
                cells.append(f"{row[0]} {row[1]} ({col.split(':')[0]})")
            else:  # norm, then a column per task ("enwik8 bpc↓")
                cells.append(f"{col.rsplit(' ', 1)[0]} {row[0]}")
    return cells


def record_row(folder: Path) -> str:
    rec = json.loads((folder / "reproduce.json").read_text())
    runs = rec.get("runs", {})
    status = " / ".join(str(runs.get(s, 0)) for s in STATUSES)
    other = {s: n for s, n in runs.items() if s not in STATUSES}
    status += "".join(f", {n} {s}" for s, n in other.items())
    commits = rec.get("run_git_commits") or {}
    by_commit = ", ".join(f"`{c[:7]}` ({n})" for c, n in commits.items()) or "–"
    cells = untrained(folder)
    sessions = rec.get("sessions", [])
    wall = sum(s.get("wall_time_s", 0) for s in sessions) / 3600
    return (
        f"| `{folder}` | {status} | {len(cells)}{': ' + ', '.join(cells) if cells else ''} | "
        f"{by_commit} | {rec.get('runs_wall_time_s', 0) / 3600:.1f} | "
        f"{len(sessions)}, {wall:.1f} h |"
    )


def main(argv: Optional[list[str]] = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if not args:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    missing = [a for a in args if not (Path(a) / "reproduce.json").is_file()]
    if missing:
        print(
            f"study_record: {missing[0]}/reproduce.json: no such file (a results folder)",
            file=sys.stderr,
        )
        return 2
    print(
        "| folder | runs (completed / diverged / failed) | cells that did not train | trained at "
        "(runs) | one-thread job hours | slices, driver wall time |"
    )
    print("|---|---|---|---|---|---|")
    for a in args:
        print(record_row(Path(a.rstrip("/"))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
