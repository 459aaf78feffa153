"""Whether the primary family was declared before its data: computed from git, never written by
hand. The declaration is the claims files (normlab/configs/study/claims.yaml and the campaign's
claims.yaml; a confirmatory study's declaration file too). The data are the runs the results
folder reports, trained at the commits reproduce.json's ``run_git_commits`` names. The family was
declared before its data when every file declares the same at every one of those commits as it
does now (parsed, as the declaration's hash is: a comment or a re-indent is no change), so the
runs were trained under the declaration as it stands; the dates shown are the last commit that
changed what the files declare and the earliest run's commit. A family whose declaration changed after a run was trained is
exploratory: its tests check the rule, not a prediction made before the runs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Iterable, NamedTuple, Optional, Sequence

import yaml

from ...gitinfo import REPO, GitError, git
from .findings import CLAIMS_FILE
from .protocol import FILE as PROTOCOL_FILE

FILES = (PROTOCOL_FILE, CLAIMS_FILE)


class Declared(NamedTuple):
    before: bool  # every run's commit declares what the files declare now
    declaration: str  # "<commit[:7]> (<date>)"
    data: str  # the earliest run's commit, "<commit[:7]> (<date>)"


def _when(*args: str) -> Optional[tuple[str, int, str]]:
    """(commit, unix time, date) of ``git log -1`` over ``args``; None outside a checkout."""
    try:
        out = git("log", "-1", "--format=%H %ct %cs", *args)
    except (GitError, OSError):
        return None
    parts = out.split()
    return (parts[0], int(parts[1]), parts[2]) if len(parts) == 3 else None


def _parsed(text: str):
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError:  # not YAML: its text is what it declares
        return text


def _unchanged_at(commit: str, now: dict) -> Optional[bool]:
    """Whether each file of ``now`` (path in the checkout -> what it declares now) declares the
    same at ``commit``; None when the clone does not hold the commit."""
    try:
        git("cat-file", "-e", f"{commit}^{{commit}}")
    except (GitError, OSError):
        return None
    for f, declared_now in now.items():
        try:
            then = git("show", f"{commit}:{f}")
        except (GitError, OSError):
            return False  # the file did not exist there: declared after that run
        if _parsed(then) != declared_now:
            return False
    return True


def _last_change(now: dict) -> Optional[tuple[str, int, str]]:
    """(commit, unix time, date) of the last commit that changed what the files of ``now``
    declare (a commit that changed a comment only is not one); None outside a checkout."""
    try:
        log = git("log", "--format=%H", "--", *now).split()
    except (GitError, OSError):
        return None
    for commit in log:  # newest first: the first whose parent declares otherwise changed it
        if _unchanged_at(f"{commit}^", now) is not True:
            return _when(commit)
    return None


def declared(
    folder: Optional[Path],
    commits: Optional[Iterable[str]] = None,
    files: Sequence[Path] = FILES,
) -> Optional[Declared]:
    """The family of the runs trained at ``commits`` (else those results ``folder``'s record
    names) against the declaration ``files`` (the claims files; a confirmatory study's adds its
    declaration); None when git or the record cannot tell (an installed wheel, a folder without
    reproduce.json, a file outside the checkout)."""
    if commits is None:
        try:
            record = json.loads((Path(folder) / "reproduce.json").read_text())
        except (OSError, ValueError, TypeError):
            return None
        commits = record.get("run_git_commits") or {}
    commits = sorted({c.removesuffix("-dirty") for c in commits if c})
    try:
        rel = [str(Path(f).resolve().relative_to(REPO)) for f in files]
    except ValueError:  # a declaration outside the checkout: git cannot date it
        return None
    now = {f: _parsed((REPO / f).read_text()) for f in rel}  # read once, compared at every commit
    decl = _last_change(now)
    runs = [w for c in commits if (w := _when(c))]
    unchanged = [_unchanged_at(c, now) for c in commits]
    if decl is None or not runs or None in unchanged:
        return None
    first = min(runs, key=lambda w: w[1])
    return Declared(all(unchanged), f"{decl[0][:7]} ({decl[2]})", f"{first[0][:7]} ({first[2]})")
