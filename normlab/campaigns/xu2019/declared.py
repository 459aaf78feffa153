"""Whether the primary family was declared before its data: computed from git, never written by
hand. The declaration is the claims files (normlab/configs/study/claims.yaml and the campaign's
claims.yaml); its time is the last commit that changed either. The data are the runs the results
folder reports; their time is the earliest commit they were trained at (reproduce.json's
``run_git_commits``). A family whose declaration changed after its first run was trained is
exploratory: its tests check the rule, not a prediction made before the runs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Iterable, NamedTuple, Optional, Sequence

from ...gitinfo import REPO, GitError, git
from .findings import CLAIMS_FILE
from .protocol import FILE as PROTOCOL_FILE

FILES = (PROTOCOL_FILE, CLAIMS_FILE)


class Declared(NamedTuple):
    before: bool  # the declaration's last change predates the earliest run's commit
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
    commits = sorted({c for c in commits if c})
    try:
        decl = _when("--", *(str(Path(f).resolve().relative_to(REPO)) for f in files))
    except ValueError:  # a declaration outside the checkout: git cannot date it
        return None
    runs = [w for c in commits if (w := _when(c.removesuffix("-dirty")))]
    if decl is None or not runs:
        return None
    first = min(runs, key=lambda w: w[1])
    return Declared(
        decl[1] < first[1], f"{decl[0][:7]} ({decl[2]})", f"{first[0][:7]} ({first[2]})"
    )
