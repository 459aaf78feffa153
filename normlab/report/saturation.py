"""DyT-like norms in the probe's records: each run's alpha and the share of the norms' inputs past
the tanh knee (alpha/all/... keys, normlab.norms.probe.saturation), at the first and the last probe
record, so a reader sees whether alpha grew into saturation (where the norm passes almost no
gradient) or stayed in the linear part."""

from __future__ import annotations

import statistics
from typing import Optional

from ..schema import SATURATION_KNEE as KNEE
from .aggregate import Grid, data_sentence, finite
from .runs import Run
from .tables import Table

KEYS = ("alpha", "saturated")


def alpha_records(run: Run) -> list[dict]:
    """{"step", "alpha", "saturated"} per train record that has them (means over layers)."""
    out = []
    for r in run.curves:
        vals = {k: r.get(f"alpha/all/{k}") for k in KEYS}
        if r.get("split") == "train" and all(finite(v) for v in vals.values()):
            out.append({"step": r["step"], **vals})
    return out


def has_alpha(grid: Grid) -> bool:
    return any(alpha_records(r) for r in grid.runs)


def _median(runs: list[Run], which: int, key: str) -> Optional[float]:
    xs = [recs[which][key] for r in runs if (recs := alpha_records(r))]
    return statistics.median(xs) if xs else None


def saturation_table(grid: Grid) -> Table:
    columns = [c for c in grid.columns if any(alpha_records(r) for r in grid.column_runs(c))]
    header = ["norm"]
    for c in columns:
        header += [f"{c} α first → last", f"{c} share |u| > {KNEE:g} first → last", f"{c} n"]
    t = Table("alpha_saturation", "DyT-like norms: α (BHyT: λ) and saturation", header)
    for v in grid.variants():
        cells = [grid.cell(c, v) for c in columns]
        if not any(alpha_records(r) for cell in cells for r in cell.runs):
            continue
        row = [grid.label(v)]
        for cell in cells:
            runs = cell.runs
            n = sum(1 for r in runs if alpha_records(r))
            if not n:
                row += ["–", "–", "0"]
                continue
            a0, a1 = _median(runs, 0, "alpha"), _median(runs, -1, "alpha")
            s0, s1 = _median(runs, 0, "saturated"), _median(runs, -1, "saturated")
            row += [
                f"{a0:.3g} → {a1:.3g}",
                f"{100 * s0:.1f}% → {100 * s1:.1f}%",
                cell.labelled(str(n)),
            ]
        t.rows.append(row)
    t.caption = (
        "Median over seeds (every run with probe records, diverged ones included) of the first and "
        "the last probe record (task.train.probe_every); α and the share are means over the norm "
        f"layers (BHyT: its λ). Saturated: an input element whose squashing function's argument u is "
        f"past the knee, |u| > {KNEE:g} (DyT: u = αx; Derf: αx + s; BHyT: λx / (κ RMS(x))), "
        "where tanh' < 0.071 (erf' < 0.021), so it passes almost no gradient. Per-layer values are "
        "in each run's curves.jsonl (alpha/<layer>/alpha, alpha/<layer>/saturated)."
    )
    t.notes = [data_sentence(grid, columns)]
    return t
