"""reproduce.json: how a results folder came to be (a campaign's study driver writes it).

One record per results folder: the commit its runs were trained at (and whether that tree was
clean), the commit the tables were written at, the runs by status and by commit, and one entry per
driver session (command, machine, wall time, runs trained). Sessions of another commit's grid are
dropped, since its runs are no longer the folder's.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import shlex
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Iterable, Optional

from .. import gitinfo
from .runs import Run


def utc_now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def read(out: Path) -> dict:
    try:
        return json.loads((Path(out) / "reproduce.json").read_text())
    except (OSError, ValueError):
        return {}


def counts(values: Iterable) -> dict:
    return dict(Counter(str(v) for v in values))


RECORD_OUT = "--record-out"
RECORD_OUT_HELP = (
    "the results folder the report stamp names (default --out): scripts/commit_results.sh writes "
    "the tables in a scratch copy of that folder"
)


def command(script: str, argv: Optional[list]) -> str:
    """``python SCRIPT ARGS`` (SCRIPT: a path, or ``-m module``): the command line that re-creates the folder: ``--record-out F`` recorded as ``--out F``."""
    args = list(sys.argv[1:] if argv is None else argv)
    named = _pop(args, RECORD_OUT)
    if named is not None:
        _pop(args, "--out")
        args += ["--out", named]
    return shlex.join(["python", *script.split(), *args])


def _pop(args: list, flag: str) -> Optional[str]:
    """Remove ``flag VALUE`` or ``flag=VALUE`` from args; its value, or None when it is not there."""
    for i, arg in enumerate(args):
        if arg == flag and i + 1 < len(args):
            del args[i]
            return args.pop(i)
        if arg.startswith(flag + "="):
            return args.pop(i)[len(flag) + 1 :]
    return None


def report_stamp(n_runs: int, **fields) -> dict:
    """Which code wrote the tables (it may be newer than the runs' commit: see report-only)."""
    return {
        **fields,
        "git_commit": gitinfo.head(),
        "git_dirty": gitinfo.dirty(),
        "utc": utc_now(),
        "runs": n_runs,
    }


def session(script: str, argv: Optional[list], started_utc: str, start: float, **fields) -> dict:
    """This driver session: its command line, when it started, how long it took, where it ran."""
    return {
        "command": command(script, argv),
        "started_utc": started_utc,
        "wall_time_s": round(time.monotonic() - start, 1),
        **fields,
        "machine": gitinfo.machine(),
        "data_dir": os.environ.get("NORMLAB_DATA"),
    }


def record(
    out: Path,
    make: str,
    commit: str,
    dirty: bool,
    runs: list[Run],
    grid: dict,
    this_session: Optional[dict],
    report_command: Optional[str] = None,
    **fields,
) -> dict:
    """The folder's record; ``this_session`` None: a report-only pass, which trains nothing and is
    not a session (the report stamp says when the tables were written)."""
    old = read(out)
    kept = old.get("sessions") or [] if old.get("git_commit") == commit else []
    kept = [
        s for s in kept if "--no-train" not in (s.get("command") or "")
    ]  # older drivers logged those too
    return {
        "make": make,
        "git_commit": commit,
        "git_dirty": dirty,  # False: trained from a clean checkout of the commit
        "run_git_commits": counts(r.summary.get("git_commit") for r in runs),
        "report": report_stamp(
            len(runs), **({"command": report_command} if report_command else {})
        ),
        "runs_wall_time_s": round(sum(r.summary.get("wall_time_s", 0.0) for r in runs), 1),
        "grid": grid,
        "runs": counts(r.status for r in runs),
        **fields,
        "sessions": [*kept, *([this_session] if this_session else [])],
    }


def promoted(committed: dict, staged: dict) -> dict:
    """The staged record that replaces a folder's on promotion. Staged runs of the folder's own
    commit join its runs (seeds added to a complete study) rather than replace them, so the
    sessions that trained those runs stay, before the staged ones; another commit's do not."""
    if not committed or committed.get("git_commit") != staged.get("git_commit"):
        return staged
    have = {s.get("started_utc") for s in staged.get("sessions") or []}
    earlier = [s for s in committed.get("sessions") or [] if s.get("started_utc") not in have]
    return {**staged, "sessions": [*earlier, *(staged.get("sessions") or [])]}
