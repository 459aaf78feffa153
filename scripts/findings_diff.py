"""How a results folder's findings moved between two versions: each claim's standing before and
after, and every row whose verdict, seeds or difference changed.

    python scripts/findings_diff.py 5cc4178 results/mini            # that commit -> the working tree
    python scripts/findings_diff.py 5cc4178 HEAD results/mini-tuned
    python scripts/findings_diff.py old/results/mini results/mini   # two folders

Each version is a git revision (the folder's claims table as committed there) or a folder that holds
one: findings.csv, or the tuned study's tuned_findings.csv (each norm at its own lr). A row is a
claim on a task; its verdict is the one the table reports (after Holm in the primary family). A row
that went from unresolved to decided with more seeds is a row resolved by added seeds: the table
says how many seeds it took. Prints Markdown; exit 2 when a version has no findings table.
"""

from __future__ import annotations

import csv
import io
import subprocess
import sys
from pathlib import Path
from typing import Optional

from normlab.report.verdicts import AGAINST, SUPPORTS, UNTESTED

KINDS = ("supported", "refuted", "negligible", "unresolved", "untested")


class NoFindings(Exception):
    pass


# a folder's claims table: the fixed-lr studies', else the tuned study's (each norm at its own lr)
TABLES = ("findings.csv", "tuned_findings.csv")


def read(version: str, folder: str) -> tuple[str, dict]:
    """(label, {(claim, task): row}) of one version's claims table (TABLES, the first there)."""
    path = Path(version)
    if path.is_dir():
        found = [path / t for t in TABLES if (path / t).is_file()]
        if not found:
            raise NoFindings(f"{path}: no {' or '.join(TABLES)} (a folder the report wrote)")
        text, label = found[0].read_text(), str(path)
    else:
        for table in TABLES:
            got = subprocess.run(
                ["git", "show", f"{version}:{folder}/{table}"], capture_output=True, text=True
            )
            if got.returncode == 0:
                break
        else:
            why = got.stderr.strip().splitlines()[-1]
            raise NoFindings(f"{version}:{folder}: no {' or '.join(TABLES)} ({why})")
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
    if v == "equivalent":  # the word for negligible before every class had its own test
        return "negligible"
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
