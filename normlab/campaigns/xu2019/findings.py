"""Does each claim of Xu et al. (2019) hold in our runs? One row per claim and task.

The paper's five claims are a claims file (claims.yaml beside this module, read by the same loader
as a user's ``normlab-report --claims FILE``), tested by the report's engine
(normlab.report.verdicts: one test per row by the claim's form, cells first). What the campaign
adds: the seeds may be added to the primary study's unresolved rows in looks (claims.yaml
``sequential`` under normlab/configs/study), so each row carries its look-adjusted p, and the
paper's published difference beside ours.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from ...report.aggregate import Grid
from ...report.claimfile import load
from ...report.protocol import Protocol
from ...report.verdicts import AGAINST, SUPPORTS, UNTESTED, Claim, Finding, claim_rows
from ...report.verdicts import evaluate as _evaluate
from . import published as P
from .protocol import protocol

__all__ = [
    "AGAINST",
    "CLAIMS",
    "SUPPORTS",
    "UNTESTED",
    "Claim",
    "Finding",
    "added_seeds",
    "evaluate",
    "findings",
]

CLAIMS_FILE = Path(__file__).with_name("claims.yaml")
CLAIMS = load(CLAIMS_FILE).claims


def look_sizes() -> list[int]:
    """The numbers of seeds at which a primary row is tested (claims.yaml ``sequential``)."""
    return list(protocol().looks)


def looks_of(protocol: Protocol) -> list[int]:
    """The looks ``protocol`` declares (a confirmatory study's), else the campaign's."""
    return list(protocol.looks) or look_sizes()


def added_seeds(seeds: list[int], max_seeds: int) -> list[int]:
    """The seeds ``--until-resolved`` may add after the first look's ``seeds``, in the order it adds
    them: the next integers, up to the last look size at or below ``max_seeds``."""
    sizes = [n for n in look_sizes() if n <= max_seeds]
    extra = sizes[-1] - len(seeds) if sizes and seeds else 0
    return [max(seeds) + 1 + i for i in range(max(0, extra))]


def _paper(claim: Claim, column: str) -> str:
    # the paper's numbers are at its own settings: a column of a swept setting has none
    task = column.split("@")[0]
    if claim.measure in ("gap", "loss"):  # the overfitting claim: a figure, not a table's number
        return "shown (Enwiki8 figure)" if task == "enwik8" else "–"
    if not P.has_published(task):
        return "–"
    return P.improvement_text(task, claim.a, claim.b)


def evaluate(grid: Grid, claim: Claim, column: str) -> Optional[Finding]:
    """The finding for one claim on one column (unadjusted); None when either norm has no runs there."""
    return _evaluate(grid, claim, column, looks=looks_of(grid.protocol), paper=_paper)


def findings(grid: Grid) -> list[Finding]:
    """Every claim row of one grid, unadjusted (family.apply adjusts them)."""
    return claim_rows(grid, CLAIMS, looks=looks_of(grid.protocol), paper=_paper)
