"""Training at one pinned commit, so that a table never mixes code versions.

A grid that outlives a session (the mini grid takes hours on 2 cores; the tuned comparison longer)
is trained in steps, and the code keeps changing between them. Every run of one table must still
come from the same code. So a grid is pinned to a commit: its runs are trained from a clean
``git worktree`` of that commit (``.cache/code/<commit[:12]>``), whatever the checkout's own HEAD
is, and its run root is ``runs/<commit[:12]>`` so runs of other code are never taken for finished.

Which commit: the one the grid's committed run copies came from (``results/<scale>/runs``), so a
fresh clone continues the grid it finds; for a grid with no copies yet, HEAD, which must be clean.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections import Counter
from pathlib import Path
from typing import Callable, Iterable, Optional

from ..gitinfo import CODE, REPO, GitError, dirty, git, head

# git failures and pin failures are one error: either way the grid cannot be trained at one
# clean commit, and the caller says so in one line.
PinError = GitError


class UncommittedCode(PinError):
    """A new grid would be trained at HEAD, and HEAD's code has uncommitted changes."""


DISCARD = (
    "remove the copies of all but one commit, or discard them and re-train the study "
    "(--discard-staging <that folder>)"
)


def commit_of_copies(where: Path, keep: Optional[Callable[[dict], bool]] = None) -> Optional[str]:
    """The commit the run copies in ``where`` continue at (None when there are none);
    "<commit>-dirty" when they were trained from uncommitted code. One commit, or, when a continued
    results folder kept some tasks at older commits (each task's copies still from one:
    ``task_commits``), the newest of them. ``keep``: only the copies whose summary it accepts count
    (the reported ones, say)."""
    found = set(task_commits(where, keep, fix=DISCARD).values())
    if len(found) > 1 and any(c.endswith("-dirty") for c in found):
        raise PinError(
            f"{where} holds runs of {len(found)} commits ({', '.join(sorted(c[:12] for c in found))}), "
            f"some from uncommitted code; a table must not mix code versions: {DISCARD}"
        )
    return newest(found) if found else None


def task_commits(
    where: Path,
    keep: Optional[Callable[[dict], bool]] = None,
    strict: bool = True,
    fix: str = "re-train that task at one commit (--tasks, --commit) and promote it",
) -> dict[str, str]:
    """task -> the one commit its run copies in ``where`` came from ("-dirty" as above). A results
    folder may join tasks trained at different commits (a study re-trained for the tasks whose
    preset changed); a task, and so a table row, never mixes two: PinError. ``strict`` False (a
    record of what is there): the commit of most of the task's copies instead."""
    found: dict[str, Counter] = {}
    for task, commit in _copy_commits(where, keep):
        if commit:  # a copy that names no task is a task of its own ("")
            found.setdefault(task or "", Counter())[commit] += 1
    mixed = {t: sorted(c) for t, c in found.items() if len(c) > 1}
    if mixed and strict:
        task, commits = next(iter(sorted(mixed.items())))
        raise PinError(
            f"{where}: the runs of task {task or '(none named)'} come from {len(commits)} commits "
            f"({', '.join(c[:12] for c in commits)}); a row must not mix code versions: {fix}"
        )
    return {t: c.most_common(1)[0][0] for t, c in sorted(found.items())}


def newest(commits: Iterable[str]) -> str:
    """The commit whose history holds all the others (PinError when they are not on one line)."""
    commits = sorted(set(commits))
    for c in commits:
        if all(contains(c, o) for o in commits if o != c):
            return c
    raise PinError(
        f"the runs come from commits on different branches ({', '.join(c[:12] for c in commits)}): "
        "name the one to continue at with --commit"
    )


def _copy_commits(
    where: Path, keep: Optional[Callable[[dict], bool]] = None
) -> Iterable[tuple[Optional[str], Optional[str]]]:
    """(task, "<commit>[-dirty]") of every run copy in ``where`` that ``keep`` accepts."""
    for f in sorted(Path(where).rglob("summary.json")) if Path(where).exists() else []:
        try:
            s = json.loads(f.read_text())
        except ValueError:
            continue
        if keep is not None and not keep(s):
            continue
        yield (
            s.get("task"),
            s.get("git_commit") and s["git_commit"] + ("-dirty" if s.get("git_dirty") else ""),
        )


def resolve(
    copies: Path,
    requested: Optional[str] = None,
    working_tree: bool = False,
    fallback: Optional[str] = None,
    keep: Optional[Callable[[dict], bool]] = None,
) -> tuple[str, Optional[Path], bool]:
    """(commit, checkout to train from, dirty) of a grid whose run copies are in ``copies``.
    Default: the copies' commit, else ``fallback`` (a sibling grid's), else a clean HEAD, trained
    from a clean worktree (checkout None: ``checkout(commit)`` makes it when there is training to
    do). ``working_tree``: HEAD's own checkout as it is, for development and tests. ``keep``: the
    copies whose commit counts (not those another study trained and this one stages)."""
    found = commit_of_copies(copies, keep)
    if not working_tree:
        if found and found.endswith("-dirty"):
            raise PinError(
                f"the run copies in {copies} were trained from uncommitted code (--working-tree); "
                "discard them (--discard-staging <that folder>) to re-train them from a commit"
            )
        return choose(requested, found or (None if requested else fallback), copies), None, False
    commit, is_dirty = head(), dirty()
    if found and found != commit + ("-dirty" if is_dirty else ""):
        raise PinError(
            f"--working-tree: the run copies in {copies} come from {found[:12]}, and this checkout is "
            f"{commit[:12]}{' with changes' if is_dirty else ''}; drop --working-tree, or discard them "
            "(--discard-staging <that folder>)"
        )
    return commit, REPO, is_dirty


def choose(requested: Optional[str], copies: Optional[str], where: Path) -> str:
    """The grid's commit: ``requested`` (--commit), else the copies', else a clean HEAD."""
    if requested:
        full = git("rev-parse", "--verify", f"{requested}^{{commit}}")
        if copies and full != copies:
            raise PinError(
                f"--commit {requested} is {full[:12]}, but the run copies in {where} come from "
                f"{copies[:12]}: continue at {copies[:12]}, or discard them (--discard-staging) to re-train at "
                f"{full[:12]}"
            )
        return full
    if copies:
        return copies
    if dirty():
        raise UncommittedCode(
            f"the code ({', '.join(CODE)}) has uncommitted changes, and the grid is trained from a clean "
            "checkout of a commit: commit them first, pass --commit <rev> to train at a commit, or "
            "--working-tree to train from the checkout as it is"
        )
    return head()


def checkout(commit: str) -> Path:
    """A clean worktree of ``commit`` (created once, re-used). Always a worktree, even for HEAD: the
    jobs of a long sweep import normlab one by one, and must not see edits made to the checkout
    while it runs."""
    path = REPO / ".cache" / "code" / commit[:12]
    path.parent.mkdir(parents=True, exist_ok=True)
    # two drivers (or test processes) pinning the same commit at once must not both create it
    with open(path.parent / ".lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (path / ".git").exists():
            try:
                git("cat-file", "-e", f"{commit}^{{commit}}")
            except PinError:
                raise PinError(
                    f"commit {commit[:12]} is not in this clone (the run copies came from it): fetch "
                    "it (git fetch --unshallow on a shallow clone), or discard the copies "
                    "(--discard-staging) to re-train"
                ) from None
            git("worktree", "prune")
            git("worktree", "add", "--detach", str(path), commit)
    if git("rev-parse", "HEAD", cwd=path) != commit or dirty(path):
        raise PinError(
            f"{path} is not a clean checkout of {commit[:12]}: remove it (git worktree remove --force "
            f"{path}) and run again"
        )
    return path


def contains(commit: str, ancestor: str) -> bool:
    """Whether ``commit``'s history holds ``ancestor`` (True when this clone lacks ``ancestor``: a
    shallow clone holds only newer commits)."""
    try:
        git("cat-file", "-e", f"{ancestor}^{{commit}}")
    except PinError:
        return True
    try:
        git("merge-base", "--is-ancestor", ancestor, commit)
    except PinError:
        return False
    return True


def environ(code: Path) -> dict:
    """The environment of a job run from ``code``: its normlab and hydra_plugins come first on the
    path (the venv's editable install points at the main checkout). Jobs run inside the worktree,
    so the config's default data folder (``<cwd>/data``) would point into it: the caller's own
    default is passed on instead. The cache stays per worktree, since its format may differ
    between commits."""
    env = dict(os.environ)
    env.setdefault("NORMLAB_DATA", str(Path.cwd() / "data"))
    env["PYTHONPATH"] = os.pathsep.join([str(code), *filter(None, [env.get("PYTHONPATH")])])
    return env


def root_for(base: Path, commit: str, dirty: bool = False) -> Path:
    return Path(base) / (commit[:12] + ("-dirty" if dirty else ""))
