"""Partial studies keep main green: finished runs are staged, and a complete study is promoted.

While a study trains (over several slices, each committing what finished), its run copies go to
``results/staging/<folder>/runs``, which no committed-tables check reads. Once every job of the
study is finished, ``promote`` replaces the reported copies in ``results/<folder>/runs`` (every
copy but the selection runs still at their task's preset) with the staged ones in one step; the
old copies stay in git history. All staged studies share one commit, so the studies that share
runs (the tuned grid and the fixed grid's preset-lr runs) come from the same code.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Callable, Optional

from ..report.roles import SELECTION, role_of
from ..report.runs import find_runs
from . import pin

STAGING = "staging"
# how resolve() names a commit taken from a results folder's own copies: then each of its tasks
# is continued at the commit its copies came from
REPORTED = "the runs reported in"


def staging_dir(out: Path) -> Path:
    """results/<folder> -> results/staging/<folder>"""
    return Path(out).parent / STAGING / Path(out).name


def trained_by_study(summary: dict) -> bool:
    """A copy the study trains, not one of the selection record's (those keep their own commit,
    the record's, and a study stages them beside its own runs)."""
    return role_of(summary) != SELECTION


def scale_of(folder: Path) -> str:
    """results/<scale>[-<study>]: the scale a results folder's name starts with."""
    return Path(folder).name.split("-")[0]


def staged_commits(out: Path) -> dict[Path, str]:
    """The commit of every study of ``out``'s scale staged beside it (results/staging/<scale>*/runs):
    the studies of one scale share runs, those of other scales (a smoke test's) share nothing."""
    found = {}
    for runs in sorted((Path(out).parent / STAGING).glob("*/runs")):
        if scale_of(runs.parent) != scale_of(out):
            continue
        commit = pin.commit_of_copies(runs, keep=trained_by_study) or recorded_commit(runs.parent)
        if commit:
            found[runs.parent] = commit
    return found


def recorded_commit(stage: Path) -> Optional[str]:
    """The commit a staged study's record (reproduce.json) says its slices train at: the one
    witness of a study that trains selection runs only (an lr selection), whose own copies the
    role filter cannot tell from the selection record's it reuses."""
    try:
        record = json.loads((Path(stage) / "reproduce.json").read_text())
    except (OSError, ValueError):
        return None
    commit = record.get("git_commit") if isinstance(record, dict) else None
    if not isinstance(commit, str) or not commit:
        return None
    return commit + "-dirty" if record.get("git_dirty") else commit


def resolve(
    out: Path, requested: Optional[str], working_tree: bool, shares_with: tuple = ()
) -> tuple[str, Optional[Path], bool, str]:
    """(commit, checkout, dirty) of the study whose results folder is ``out``: its staged copies'
    commit, else a sibling staged study's, else --commit (a new study), else the commit of the runs
    the folder reports (a fresh clone continues what it finds) or, for none, that of the folders in
    ``shares_with`` (the study whose runs it shares), else a clean HEAD. A --commit that
    disagrees with what is staged is refused: nothing staged is ever dropped without being named.
    The fourth value says where the commit came from."""
    stage = staging_dir(out)
    commits = staged_commits(out)
    if len(set(commits.values())) > 1:
        raise pin.PinError(
            "the staged studies come from different commits ("
            + ", ".join(f"{p}: {c[:12]}" for p, c in commits.items())
            + "); studies that share runs must share one commit: discard all but one by name "
            "(--discard-staging <folder>)"
        )
    staged = next(iter(commits.values()), None)
    if staged and requested and not working_tree:
        full = pin.git("rev-parse", "--verify", f"{requested}^{{commit}}")
        if full != staged.removesuffix("-dirty"):
            raise pin.PinError(
                f"--commit {requested} is {full[:12]}, but the staged studies "
                f"({', '.join(str(p) for p in commits)}) come from {staged[:12]}: continue at "
                f"{staged[:12]} (drop --commit), or discard them by name (--discard-staging {stage})"
            )
    if working_tree:
        return (
            *pin.resolve(stage / "runs", None, True, keep=trained_by_study),
            "this checkout as it is (--working-tree)",
        )
    if staged or requested:
        where = "the staged studies" if staged else "--commit"
        return (
            *pin.resolve(
                stage / "runs",
                requested,
                False,
                fallback=None if requested else staged,
                keep=trained_by_study,
            ),
            where,
        )
    # nothing staged, no --commit: continue the grid the folder reports (a fresh clone finds it complete)
    reported, where = None, "a clean HEAD (a new study)"
    for folder in (
        Path(out),
        *map(Path, shares_with),
    ):  # a study whose runs it shares, e.g. the fixed-lr one
        reported = reported_commit(folder / "runs")
        if reported:
            where = f"{REPORTED} {folder.name}/runs (a new study at other code: --commit)"
            break
    return (
        *pin.resolve(stage / "runs", None, False, fallback=reported, keep=trained_by_study),
        where,
    )


def reported_commit(runs: Path) -> Optional[str]:
    """The commit of the reported (non-selection) copies in ``runs``, the newest when its tasks
    were trained at different commits (each task keeps its own: Study.task_commits); None when
    there are none or some came from uncommitted code."""
    commits = set(pin.task_commits(runs, keep=trained_by_study).values())
    if not commits or any(c.endswith("-dirty") for c in commits):
        return None
    return pin.newest(commits)


def continues_folder(
    out: Path, commit: str, source: str, named: bool, until_resolved: bool
) -> bool:
    """Whether a pass at ``commit`` continues ``out``'s folder, each task at the commit the folder
    reports for it (a later slice finds them in its staged copies): one pinned by the folder's
    reported copies, or by a sibling's staged ones at the same commit (a complete study stays
    complete while another is in slices); one with --until-resolved, which adds seeds to the
    folder's rows, unless it names (``named``: --commit) another commit than theirs. A plain
    --commit re-trains the tasks it is given at that commit."""
    if source.startswith(REPORTED):
        return True
    if (staging_dir(out) / "runs").exists():
        return False
    if until_resolved and not named:
        return True
    return (until_resolved or not named) and commit == reported_commit(Path(out) / "runs")


def kept_tasks(out: Path, commit: str) -> dict[str, str]:
    """task -> commit of the tasks that the staged copies of ``out``'s study hold at another commit
    than the study's ``commit``: those a pass continuing the results folder kept at their own (and
    trained their added seeds at). Each must be the commit the folder reports for that task, or
    the staged copies are not one study's: PinError."""
    staged = pin.task_commits(staging_dir(out) / "runs", keep=trained_by_study)
    kept = {t: c for t, c in staged.items() if c != commit}
    runs = Path(out) / "runs"
    reported = pin.task_commits(runs, keep=trained_by_study, strict=False) if kept else {}
    for task, c in kept.items():
        if reported.get(task) != c:
            raise pin.PinError(
                f"{staging_dir(out)}: the staged runs of task {task} come from {c[:12]}, neither the "
                f"study's commit {commit[:12]} nor the one {runs} reports for {task}: discard them by "
                f"name (--discard-staging {staging_dir(out)})"
            )
    return kept


def pin_study(
    out: Path,
    requested: Optional[str],
    working_tree: bool,
    discard_named: Optional[Path] = None,
    plan: bool = False,
    shares_with: tuple = (),
) -> tuple[str, Optional[Path], bool, str]:
    """A driver's pinning: ``discard`` the staging folder it names, then ``resolve``; a --plan of a
    new study in a checkout with uncommitted changes is planned at HEAD (training it is refused)."""
    if discard_named:
        discard(out, discard_named)
    try:
        return resolve(out, requested, working_tree, shares_with)
    except pin.UncommittedCode:
        if not plan:
            raise
        print(
            "[plan] the code has uncommitted changes: planned at HEAD (training needs a clean tree or --commit)"
        )
        return pin.head(), None, False, "HEAD (uncommitted changes: planned only)"


def discard(out: Path, named: Path) -> None:
    """Remove the staged copies of ``out``'s study; only when the caller names that folder."""
    stage = staging_dir(out)
    if Path(named).resolve() != stage.resolve():
        raise pin.PinError(
            f"--discard-staging {named}: this study's staging folder is {stage}; name it exactly"
        )
    shutil.rmtree(stage, ignore_errors=True)


def promote(
    out: Path,
    tasks: Optional[list] = None,
    at_preset: Callable[[Path, str], bool] = lambda where, task: True,
) -> tuple[int, int]:
    """Replace the reported copies of ``out`` with the staged ones; returns (removed, added).
    ``tasks``: the study's; the reported copies of other tasks stay (a study re-trained for some
    tasks only, e.g. those whose preset changed). A selection copy stays while it was trained at
    its task's preset (``at_preset(folder, task)``): the choice it made stays made; one of an older
    preset chose nothing the study reports (its task was re-selected) and goes with the rest."""
    stage, runs = staging_dir(out), Path(out) / "runs"
    removed = 0
    for r in find_runs([runs]) if runs.exists() else []:
        if tasks is not None and r.task not in tasks:
            continue
        if not (role_of(r.summary) == SELECTION and at_preset(r.path, r.task)):
            shutil.rmtree(r.path)
            removed += 1
    added = 0
    for r in find_runs([stage / "runs"]):
        dest = runs / r.path.relative_to(stage / "runs")
        if dest.exists():
            shutil.rmtree(dest)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copytree(r.path, dest)
        added += 1
    for empty in sorted(runs.rglob("*"), key=lambda p: len(p.parts), reverse=True):
        if empty.is_dir() and not any(empty.iterdir()):
            empty.rmdir()
    shutil.rmtree(stage)
    if not any(stage.parent.iterdir()):
        stage.parent.rmdir()
    return removed, added
