"""A table as plain rows of strings, written as Markdown, CSV and LaTeX from the same cells.

Every table carries a caption (what the numbers are, the scale, and the data each task used);
Markdown and LaTeX print it under the table, CSV gets it as a final ``caption`` row so that a
spreadsheet copy never loses what the numbers mean.
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass, field
from pathlib import Path

from ..files import atomic_write_bytes


@dataclass
class Table:
    key: str  # file stem: table1, summary, data, ...
    title: str
    header: list[str]
    rows: list[list[str]] = field(default_factory=list)
    caption: str = ""
    notes: list[str] = field(default_factory=list)  # extra caption sentences (data, footnotes)
    # LaTeX only: column index -> True when higher is better; the best mean of each such column is
    # set in bold, over every row but those in ``unranked`` (e.g. Improvement rows, which are differences)
    best: dict = field(default_factory=dict)
    unranked: set = field(default_factory=set)
    long: bool = (
        False  # LaTeX longtable: one row per run does not fit a page, it must break across pages
    )

    @property
    def full_caption(self) -> str:
        return " ".join(s for s in [self.caption, *self.notes] if s)

    def markdown(self) -> str:
        def line(cells):
            return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"

        out = [
            f"### {self.title}",
            "",
            line(self.header),
            "|" + "|".join(["---"] * len(self.header)) + "|",
        ]
        out += [line(r) for r in self.rows]
        if self.full_caption:
            out += ["", self.full_caption]
        return "\n".join(out) + "\n"

    def csv(self) -> str:
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(self.header)
        w.writerows(self.rows)
        if self.full_caption:
            w.writerow(["caption", self.full_caption] + [""] * (len(self.header) - 2))
        return buf.getvalue()

    def latex(self) -> str:
        cols = "l" + "r" * (len(self.header) - 1)
        header = " & ".join(latex_escape(c) for c in self.header) + r" \\"
        cells = [[latex_escape(c) for c in r] for r in self.rows]
        for j, i in self._best_cells():
            cells[i][j] = rf"\textbf{{{cells[i][j]}}}"
        body = [" & ".join(r) + r" \\" for r in cells]
        caption = f"{self.title}. {self.full_caption}" + (
            " Bold: the best mean of each column." if self.best else ""
        )
        caption = rf"\caption{{{latex_escape(caption)}}}"
        if self.long:
            return "\n".join(
                [
                    r"% needs \usepackage{booktabs,longtable}",
                    r"{\small",
                    rf"\begin{{longtable}}{{{cols}}}",
                    caption + rf"\label{{tab:{self.key}}} \\",
                    r"\toprule",
                    header,
                    r"\midrule",
                    r"\endfirsthead",
                    r"\toprule",
                    header,
                    r"\midrule",
                    r"\endhead",
                    r"\bottomrule",
                    r"\endfoot",
                    *body,
                    r"\end{longtable}}",
                    "",
                ]
            )
        return "\n".join(
            [
                r"% needs \usepackage{booktabs,graphicx}",
                r"\begin{table}[t]",
                r"\centering",
                r"\small",
                r"\resizebox{\linewidth}{!}{%",
                rf"\begin{{tabular}}{{{cols}}}",
                r"\toprule",
                header,
                r"\midrule",
                *body,
                r"\bottomrule",
                r"\end{tabular}}",
                caption,
                rf"\label{{tab:{self.key}}}",
                r"\end{table}",
                "",
            ]
        )

    def _best_cells(self) -> list[tuple[int, int]]:
        """(column, row) of each ranked column's best mean; ties at the printed precision all count."""
        out = []
        for j, higher in self.best.items():
            vals = [
                (i, _lead_number(r[j])) for i, r in enumerate(self.rows) if i not in self.unranked
            ]
            vals = [(i, v) for i, v in vals if v is not None]
            if len(vals) < 2:
                continue  # one number is no comparison
            b = max(v for _, v in vals) if higher else min(v for _, v in vals)
            out += [(j, i) for i, v in vals if v == b]
        return out

    def write(self, out: Path) -> list[Path]:
        paths = []
        for ext, text in (("md", self.markdown()), ("csv", self.csv()), ("tex", self.latex())):
            p = Path(out) / f"{self.key}.{ext}"
            atomic_write_bytes(p, text.encode())
            paths.append(p)
        return paths


def _lead_number(cell: str):
    """The mean a cell starts with ("85.20 ± 0.41 (n=3)" -> 85.2); None for "Diverge (3/3)", "–", ...."""
    m = re.match(r"\s*([+-]?\d+(?:\.\d+)?)", cell)
    return float(m.group(1)) if m else None


_LATEX_SPECIAL = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
}
_LATEX_UNICODE = {
    "±": r"$\pm$",
    "↑": r"$\uparrow$",
    "↓": r"$\downarrow$",
    "−": r"$-$",
    "–": "--",
    "†": r"$^\dagger$",
    "×": r"$\times$",
    "≥": r"$\geq$",
    "≤": r"$\leq$",
    "σ": r"$\sigma$",
    "ℓ": r"$\ell$",
    "∂": r"$\partial$",
    "·": r"$\cdot$",
}


def latex_escape(s: str) -> str:
    s = "".join(_LATEX_SPECIAL.get(ch, ch) for ch in s)
    return "".join(_LATEX_UNICODE.get(ch, ch) for ch in s)
