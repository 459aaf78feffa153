"""A results folder's claim rows as a file (findings.json), written by its report, so that the
report of another folder of the same family reads them instead of re-reading this folder's run
copies (the tuned folder alone holds 883 runs).

The rows are kept as the folder's own report found them, before the family's corrections (those
depend on the other members). A record counts only for the runs it was computed from: its key
holds a digest of the folder's run copies (every summary.json, every curves file's size) and
what else decided the rows (the tuned study's lr grid); a record whose key differs is ignored and
the rows are computed from the runs, as before.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path
from typing import Optional

from ...files import atomic_write_bytes
from .findings import CLAIMS, Finding
from .protocol import protocol

FILE = "findings.json"
# 2: rows of cells that did not train, or of tasks not learning, are decided untested;
# 3: one test per row by the claim's form, the gap at a common step for the overfitting claim
# 4: each row's look-adjusted p (seeds added until it resolves)
# 5: each row's look (the seeds either norm ran), which the futility rule reads
# 6: every row's hypotheses (support, refutation, negligibility), each with its look-spent p
VERSION = 6
# set by family.apply over the family: not the folder's own; and the level, the protocol's
ADJUSTED = ("primary", "p_holm", "mde", "seeds_needed", "resolve_chance", "stopped", "alpha")
# read by this report's own rows only (the agreement with the paper), never by a family's
UNRECORDED = ("stream",)


def runs_digest(runs: Path) -> str:
    """What the rows of the run copies under ``runs`` depend on: every summary (its bytes) and
    every curves file (its size: a run's curves only grow while its summary is not final)."""
    h = hashlib.sha256()
    for p in sorted(Path(runs).rglob("summary.json")):
        h.update(str(p.relative_to(runs)).encode() + b"\0" + p.read_bytes() + b"\0")
        curves = p.parent / "curves.jsonl"
        h.update(str(curves.stat().st_size if curves.exists() else -1).encode() + b"\0")
    return h.hexdigest()


def _row(f: Finding) -> dict:
    skip = (*ADJUSTED, *UNRECORDED)
    d = {k.name: getattr(f, k.name) for k in dataclasses.fields(f) if k.name not in skip}
    d["claim"] = f.claim.key
    d["hyps"] = [{k: v for k, v in h.items() if k != "p_holm"} for h in f.hyps]
    return d


def _finding(d: dict) -> Finding:
    claims = {c.key: c for c in CLAIMS}
    d = dict(d, claim=claims[d["claim"]], hyps=[dict(h) for h in d.get("hyps", [])])
    if d.get("ci90") is not None:
        d["ci90"] = tuple(d["ci90"])
    return Finding(**d, alpha=d["claim"].level(protocol()))


def write(out: Path, findings: list[Finding], key: Optional[dict]) -> Path:
    """findings.json in ``out``: the rows and the key they count for (None: this report's runs
    only, never read for a family)."""
    record = {"version": VERSION, "key": key, "findings": [_row(f) for f in findings]}
    path = Path(out) / FILE
    atomic_write_bytes(path, (json.dumps(record, indent=1, sort_keys=True) + "\n").encode())
    return path


def read(folder: Path, key: dict) -> Optional[list[Finding]]:
    """The rows recorded in ``folder`` for ``key``; None when there is no record or it is another's."""
    path = Path(folder) / FILE
    try:
        record = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if record.get("version") != VERSION or record.get("key") != key:
        return None
    try:
        return [_finding(d) for d in record["findings"]]
    except (KeyError, TypeError):  # a claim renamed or a field gone since it was written
        return None
