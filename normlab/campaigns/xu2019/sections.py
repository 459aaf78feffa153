"""What the paper adds to a report of its runs: its tables after the summary, the findings on its
claims (corrected over the family of the results folder reported, when it is one), and its
figures."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from ...report import Protocol
from ...report.aggregate import Grid, data_sentence
from ...report.report import Findings
from ...report.tables import Table
from . import findings_record
from .agreement import agreement, agreement_table, tally
from .family import build, family_table
from .findings import findings
from .findings_text import findings_table, looks, method, sign_table, summary_lines
from .paper_figures import PAPER_FIGURES, paper_figure
from .paper_tables import TABLES, paper_tables
from .protocol import protocol
from .tuned import member_key


class Xu2019:
    table_keys = (*TABLES, "findings", "family", "sign_tests", "paper_agreement")
    figure_keys = tuple(PAPER_FIGURES)

    @property
    def protocol(self) -> Protocol:
        return protocol()

    def tables(self, grid: Grid) -> list[Table]:
        return paper_tables(grid)

    def findings(self, grid: Grid, member: Optional[Path]) -> Findings:
        fs = findings(grid)
        if not fs:
            return Findings()
        commits = [r.summary.get("git_commit") for r in grid.runs]
        fam = build(fs, member, commits=commits, protocol=grid.protocol)
        # a folder's record counts for another report only when this report read the runs as
        # member_findings does (no setting axis)
        key = member_key(fam.study, member) if fam.declared and not grid.axis else None
        agreed = agreement(fs, fam.protocol.alpha, len(looks(fam)))
        tables = [
            findings_table(grid, fs, fam, fam.study),
            family_table(fam, data_sentence(grid)),
            sign_table(fam, data_sentence(grid)),
        ]
        lines = summary_lines(fs, fam, fam.study)
        if agreed:
            tables.append(
                agreement_table(agreed, fam.study, fam.protocol.alpha, data_sentence(grid))
            )
            lines.append(
                f"- Agreement in sign with the paper's published differences: {tally(agreed)}."
            )
        return Findings(
            tables,
            lines,
            method(fam),
            lambda out: [findings_record.write(out, fs, key)],
        )

    def figures(self, grid: Grid, out: Path) -> dict[str, str]:
        captions = {key: paper_figure(grid, key, out) for key in PAPER_FIGURES}
        return {k: c for k, c in captions.items() if c}


CAMPAIGN = Xu2019()
