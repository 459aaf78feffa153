"""Theorem 1 of Xu et al. (2019) seen in the gradient probe's records (grad/all/... keys).

For a norm layer with output gradient g = dl/dy (element mean ḡ, variance D_g) the theorem says:
DetachNorm passes dl/dx with mean ḡ/σ and variance D_g/σ²; LayerNorm-simple re-centres it (mean
exactly 0) and shrinks its variance (≤ D_g/σ²); detaching only μ keeps the mean, detaching only σ
keeps the re-centring. The probe logs, averaged over norm layers and tokens, the per-token mean,
|mean| and variance of dl/dx ("in") and dl/dy ("out"). Two ratios per record show the mechanism
without knowing σ: |mean dl/dx| / |mean dl/dy| (≈ 0 where the mean derivative re-centres) and
Var dl/dx / Var dl/dy.
"""
from __future__ import annotations

import statistics
from typing import Optional

from .aggregate import Grid, data_sentence, finite
from .runs import Run
from .tables import Table

KEYS = ("in_absmean", "out_absmean", "in_var", "out_var")


def probe_records(run: Run) -> list[dict]:
    """{"step", in_absmean, out_absmean, in_var, out_var, mean_ratio, var_ratio} per probe record."""
    out = []
    for r in run.curves:
        vals = {k: r.get(f"grad/all/{k}") for k in KEYS}
        if r.get("split") != "train" or not all(finite(v) for v in vals.values()):
            continue
        vals["step"] = r["step"]
        vals["mean_ratio"] = vals["in_absmean"] / vals["out_absmean"] if vals["out_absmean"] > 0 else None
        vals["var_ratio"] = vals["in_var"] / vals["out_var"] if vals["out_var"] > 0 else None
        out.append(vals)
    return out


def median_ratio(runs: list[Run], key: str) -> Optional[float]:
    """Median of ``key`` over every probe record of the completed runs (seeds pooled)."""
    xs = [p[key] for r in runs if r.status == "completed" for p in probe_records(r) if p[key] is not None]
    return statistics.median(xs) if xs else None


def has_probe(grid: Grid) -> bool:
    return any(probe_records(r) for r in grid.runs)


def grad_table(grid: Grid) -> Table:
    columns = [c for c in grid.columns if any(probe_records(r) for r in grid.column_runs(c))]
    header = ["norm"]
    for c in columns:
        header += [f"{c} |mean ∂ℓ/∂x| / |mean ∂ℓ/∂y|", f"{c} Var ∂ℓ/∂x / Var ∂ℓ/∂y"]
    t = Table("grad_stats", "Theorem 1: gradient statistics through the norm layers", header)
    for v in grid.variants():
        row = [grid.label(v)]
        for c in columns:
            runs = grid.cell(c, v).runs
            for key in ("mean_ratio", "var_ratio"):
                m = median_ratio(runs, key)
                row.append("–" if m is None else f"{m:.3g}")
        t.rows.append(row)
    t.caption = ("Median over probe records (task.train.probe_every) and seeds of completed runs; statistics "
                 "are per-token means/variances over the hidden dimension, averaged over tokens and norm layers. "
                 "Theorem 1: LayerNorm-simple and Detach variance only re-centre the input gradient (first ratio "
                 "≈ 0, up to float rounding), DetachNorm and Detach mean only do not; detaching σ removes the "
                 "variance shrinkage. For LayerNorm/AdaNorm/RMSNorm/DyT ∂ℓ/∂y is taken after the gain, so their "
                 "ratios include it; w/o Norm passes the gradient unchanged (both ratios 1).")
    t.notes = [data_sentence(grid, columns)]
    return t
