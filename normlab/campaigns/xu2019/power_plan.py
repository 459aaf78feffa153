"""A confirmatory study's power, planned before its runs: per declared row (claim x task), the seeds
its test needs to resolve an effect of the margin's size, from the SD of the per-seed differences
in a declared pilot (an earlier study's findings.json), at the family's strictest level (alpha /
(m K): m the declared family's hypotheses, K its looks) with the declared power. A row that cannot
resolve within the last look's seeds is exploratory, and the declaration says so before its first
run (``exploratory``): its verdict stays outside the family's claims of support or refutation,
and "unresolved" there was the plan, not a finding."""

from __future__ import annotations

import json
from pathlib import Path
from typing import NamedTuple, Optional

from ...report import hypotheses as H
from ...report import stats as S
from .findings import CLAIMS
from .protocol import protocol


class Row(NamedTuple):
    claim: str
    task: str
    sd: Optional[float]  # the pilot's SD of the per-seed differences (None: no pilot row)
    n: int  # the pilot row's paired seeds
    margin: Optional[float]
    seeds: Optional[int]  # the first look that resolves a margin-sized effect; None: none does

    @property
    def key(self) -> str:
        return f"{self.claim}@{self.task}"


def pilot_rows(pilot: Path) -> dict[tuple[str, str], dict]:
    """(claim, task) -> the pilot folder's findings.json row (tested rows only)."""
    try:
        rows = json.loads((Path(pilot) / "findings.json").read_text())["findings"]
    except (OSError, ValueError, KeyError):
        return {}
    return {(r["claim"], r["column"]): r for r in rows if not r.get("decided") and r.get("sd")}


def plan(decl) -> tuple[list[Row], float]:
    """Every declared row's seeds to resolve, and the level they are planned at."""
    forms = {c.key: c.form for c in CLAIMS}
    cells = [(c, t) for c in decl["claims"] for t in decl["tasks"]]
    m = sum(len(H.classes(forms[c])) for c, _ in cells)
    looks = list(decl["looks"])
    level = float(decl.content.get("alpha", 0.05)) / (m * len(looks))
    pilot = pilot_rows(Path(decl["pilot"])) if decl.content.get("pilot") else {}
    power = protocol().power
    out = []
    for claim, task in cells:
        r = pilot.get((claim, task))
        sd, n = (float(r["sd"]), int(r["n"])) if r else (None, 0)
        margin = decl["margins"].get(r["unit"]) if r else None
        seeds = (
            S.seeds_to_resolve(sd, float(margin), level, looks, 1, power)
            if sd is not None and margin is not None
            else None
        )
        out.append(Row(claim, task, sd, n, margin, seeds))
    return out, level


def exploratory(rows: list[Row]) -> list[str]:
    """The rows the plan cannot resolve within the last look, as the declaration lists them."""
    return [r.key for r in rows if r.seeds is None]


def unplanned(decl) -> str:
    """Why the declaration cannot start (its exploratory rows are not the plan's), or ""; a
    declaration without a pilot has no plan to differ from."""
    if not decl.content.get("pilot"):
        return ""
    listed = sorted(decl.content.get("exploratory") or [])
    planned = sorted(exploratory(plan(decl)[0]))
    if listed == planned:
        return ""
    return (
        f"{decl.path}: exploratory: {listed or 'none'} is not the power plan's {planned or 'none'} "
        "(the rows its pilot cannot resolve within the last look); write the plan's list "
        "(--plan) into the file before the first run"
    )


def lines(decl) -> list[str]:
    """What ``--plan`` prints for a declared study."""
    rows, level = plan(decl)
    pilot = decl.content.get("pilot") or "none declared"
    out = [
        f"power (pilot {pilot}; {protocol().power:.0%} power at alpha / (m K) = {level:.3g}, "
        f"looks {decl['looks']}):"
    ]
    for r in rows:
        if r.sd is None:
            what = "no pilot SD: exploratory"
        else:
            what = f"SD {r.sd:.3g} over {r.n} pilot seeds, margin {r.margin:g}: " + (
                f"resolves by {r.seeds} seeds" if r.seeds else f"not within {decl['looks'][-1]}"
            )
        out.append(f"  {r.key}: {what}")
    listed = sorted(decl.content.get("exploratory") or [])
    planned = sorted(exploratory(rows))
    out.append(
        f"exploratory (cannot resolve within {decl['looks'][-1]} seeds): {planned or 'none'}"
        + ("" if listed == planned else "; the declaration lists "
           f"{listed or 'none'}: write the plan's list into it before the first run")
    )  # fmt: skip
    return out
