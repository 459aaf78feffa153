"""A table as plain rows of strings, written as Markdown, CSV and LaTeX from the same cells.

Every table carries a caption (what the numbers are, the scale, and the data each task used);
Markdown and LaTeX print it under the table, CSV gets it as a final ``caption`` row so that a
spreadsheet copy never loses what the numbers mean.
"""
from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field
from pathlib import Path

from ..rundir import atomic_write_bytes


@dataclass
class Table:
    key: str                      # file stem: table1, summary, data, ...
    title: str
    header: list[str]
    rows: list[list[str]] = field(default_factory=list)
    caption: str = ""
    notes: list[str] = field(default_factory=list)   # extra caption sentences (data, footnotes)

    @property
    def full_caption(self) -> str:
        return " ".join(s for s in [self.caption, *self.notes] if s)

    def markdown(self) -> str:
        def line(cells):
            return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"
        out = [f"### {self.title}", "", line(self.header), "|" + "|".join(["---"] * len(self.header)) + "|"]
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
        body = [" & ".join(latex_escape(c) for c in self.header) + r" \\", r"\midrule"]
        body += [" & ".join(latex_escape(c) for c in r) + r" \\" for r in self.rows]
        return "\n".join([
            r"% needs \usepackage{booktabs,graphicx}", r"\begin{table}[t]", r"\centering", r"\small", r"\resizebox{\linewidth}{!}{%",
            rf"\begin{{tabular}}{{{cols}}}", r"\toprule", *body, r"\bottomrule", r"\end{tabular}}",
            rf"\caption{{{latex_escape(self.title)}. {latex_escape(self.full_caption)}}}",
            rf"\label{{tab:{self.key}}}", r"\end{table}", ""])

    def write(self, out: Path) -> list[Path]:
        paths = []
        for ext, text in (("md", self.markdown()), ("csv", self.csv()), ("tex", self.latex())):
            p = Path(out) / f"{self.key}.{ext}"
            atomic_write_bytes(p, text.encode())
            paths.append(p)
        return paths


_LATEX_SPECIAL = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
                  "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}"}
_LATEX_UNICODE = {"±": r"$\pm$", "↑": r"$\uparrow$", "↓": r"$\downarrow$", "−": r"$-$", "–": "--",
                  "†": r"$^\dagger$", "×": r"$\times$", "≥": r"$\geq$", "≤": r"$\leq$", "σ": r"$\sigma$",
                  "ℓ": r"$\ell$", "∂": r"$\partial$", "·": r"$\cdot$"}


def latex_escape(s: str) -> str:
    s = "".join(_LATEX_SPECIAL.get(ch, ch) for ch in s)
    return "".join(_LATEX_UNICODE.get(ch, ch) for ch in s)
