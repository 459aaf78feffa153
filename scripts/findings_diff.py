"""How a results folder's findings moved between two versions: each claim's standing before and
after, and every row whose verdict, seeds or difference changed.

    python scripts/findings_diff.py 5cc4178 results/mini            # that commit -> the working tree
    python scripts/findings_diff.py 5cc4178 HEAD results/mini-tuned
    python scripts/findings_diff.py old/results/mini results/mini   # two folders

Each version is a git revision (the folder's findings.csv as committed there) or a folder that
holds a findings.csv. A row is a claim on a task; its verdict is the one the table reports (after
Holm in the primary family). A row that went from unresolved to decided with more seeds is a row
resolved by added seeds: the table says how many seeds it took. Prints Markdown; exit 2 when a
version has no findings table.
"""

from __future__ import annotations

import csv
import io
import subprocess
import sys
from pathlib import Path
from typing import Optional

from normlab.report.verdicts import AGAINST, SUPPORTS, UNTESTED

KINDS = ("supported", "refuted", "equivalent", "unresolved", "untested")


class NoFindings(Exception):
    pass


def read(version: str, folder: str) -> tuple[str, dict]:
    """(label, {(claim, task): row}) of one version's findings.csv."""
    path = Path(version)
    if path.is_dir():
        if not (path / "findings.csv").is_file():
            raise NoFindings(f"{path}/findings.csv: no such file (a folder the report wrote)")
        text, label = (path / "findings.csv").read_text(), str(path)
    else:
        spec = f"{version}:{folder}/findings.csv"
        got = subprocess.run(["git", "show", spec], capture_output=True, text=True)
        if got.returncode:
            raise NoFindings(f"{spec}: {got.stderr.strip().splitlines()[-1]}")
        text, label = got.stdout, version
    rows = csv.DictReader(io.StringIO(text))
    return label, {(r["claim"], r["task"]): r for r in rows if r.get("form")}  # not the caption


def kind(verdict: str) -> str:
    v = verdict.split(" (")[0]
    if v in SUPPORTS:
        return "supported"
    if v in AGAINST:
        return "refuted"
    if v in UNTESTED or not v:
        return "untested"
    return v if v in KINDS else "unresolved"


def standing(rows: list[dict]) -> str:
    counts = {k: sum(kind(r["verdict"]) == k for r in rows) for k in KINDS}
    return ", ".join(f"{k} {n}" for k, n in counts.items() if n) or "no row"


def seeds(a: Optional[dict], b: Optional[dict]) -> str:
    n = [x["n"] if x else "–" for x in (a, b)]
    return n[0] if n[0] == n[1] else f"{n[0]} → {n[1]}"


def report(before: tuple[str, dict], after: tuple[str, dict], folder: str) -> str:
    (la, a), (lb, b) = before, after
    claims = list(dict.fromkeys(c for c, _ in [*a, *b]))
    lines = [
        f"## {folder}: findings {la} → {lb}",
        "",
        "Each claim's rows by verdict (untested: did not train, not learning or too few runs).",
        "",
        "| claim | before | after |",
        "|---|---|---|",
    ]
    for c in claims:
        mine = [[r for (claim, _), r in rows.items() if claim == c] for rows in (a, b)]
        lines.append(f"| {c} | {standing(mine[0])} | {standing(mine[1])} |")
    changed = []
    for key in dict.fromkeys([*a, *b]):
        x, y = a.get(key), b.get(key)
        cells = lambda r, k: r[k] if r else "–"  # noqa: E731
        if [cells(x, k) for k in ("verdict", "n", "ours")] == [
            cells(y, k) for k in ("verdict", "n", "ours")
        ]:
            continue
        va, vb = cells(x, "verdict") or "–", cells(y, "verdict") or "–"
        grew = x and y and x["n"].isdigit() and y["n"].isdigit() and int(y["n"]) > int(x["n"])
        resolved = kind(va) == "unresolved" and kind(vb) not in ("unresolved", "untested") and grew
        changed.append(
            f"| {key[0]} | {key[1]} | {va} | {vb}{' (resolved by added seeds)' if resolved else ''} "
            f"| {seeds(x, y)} | {cells(x, 'ours')} → {cells(y, 'ours')} |"
        )
    lines += ["", f"Rows that changed: {len(changed)} of {len(set(a) | set(b))}.", ""]
    if changed:
        lines += [
            "| claim | task | before | after | n | ours |",
            "|---|---|---|---|---|---|",
            *changed,
        ]
    return "\n".join(lines)


def main(argv: Optional[list[str]] = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) not in (2, 3):
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    folder = args[-1].rstrip("/")
    try:
        before = read(args[0], folder)
        after = read(args[1] if len(args) == 3 else folder, folder)
    except NoFindings as e:
        print(f"findings_diff: {e}", file=sys.stderr)
        return 2
    print(report(before, after, folder))
    return 0


if __name__ == "__main__":
    sys.exit(main())
