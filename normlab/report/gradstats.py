"""Theorem 1 of Xu et al. (2019) seen in the gradient probe's records (grad/all/... keys).

For a norm layer with output gradient g = dl/dy (element mean ḡ, variance D_g) the theorem says:
DetachNorm passes dl/dx with mean ḡ/σ and variance D_g/σ²; LayerNorm-simple re-centres it (mean
exactly 0) and shrinks its variance (≤ D_g/σ²); detaching only μ keeps the mean, detaching only σ
keeps the re-centring. The probe logs, averaged over norm layers and tokens, the per-token mean,
|mean| and variance of dl/dx ("in") and dl/dy ("out"). Two ratios per record show the mechanism
without knowing σ: |mean dl/dx| / |mean dl/dy| (≈ 0 where the mean derivative re-centres) and
Var dl/dx / Var dl/dy. The second mostly measures 1/σ² (the scale of the norm's input), not the
theorem, so runs whose probe also logged σ (grad/all/ratio_s2, the per-layer mean of
mean_t(Var_t dl/dx · σ_t²) / mean_t(Var_t dl/dy)) get the σ²-normalized ratio Theorem 1 is about:
exactly 1 for DetachNorm (up to eps), ≤ 1 for LayerNorm-simple. Runs from before σ was logged
show "not recorded" there, never a number computed without σ.
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
        vals["mean_ratio"] = (
            vals["in_absmean"] / vals["out_absmean"] if vals["out_absmean"] > 0 else None
        )
        vals["var_ratio"] = vals["in_var"] / vals["out_var"] if vals["out_var"] > 0 else None
        vals["ratio_s2"] = r["grad/all/ratio_s2"] if finite(r.get("grad/all/ratio_s2")) else None
        out.append(vals)
    return out


def median_ratio(runs: list[Run], key: str) -> Optional[float]:
    """Median of ``key`` over every probe record of the completed runs (seeds pooled)."""
    xs = [
        p[key]
        for r in runs
        if r.status == "completed"
        for p in probe_records(r)
        if p[key] is not None
    ]
    return statistics.median(xs) if xs else None


def has_probe(grid: Grid) -> bool:
    return any(probe_records(r) for r in grid.runs)


def grad_table(grid: Grid) -> Table:
    columns = [c for c in grid.columns if any(probe_records(r) for r in grid.column_runs(c))]
    header = ["norm"]
    for c in columns:
        header += [
            f"{c} |mean ∂ℓ/∂x| / |mean ∂ℓ/∂y|",
            f"{c} Var ∂ℓ/∂x / Var ∂ℓ/∂y",
            f"{c} Var ∂ℓ/∂x · σ² / Var ∂ℓ/∂y",
        ]
    t = Table("grad_stats", "Theorem 1: gradient statistics through the norm layers", header)
    for v in grid.variants():
        row = [grid.label(v)]
        for c in columns:
            cell = grid.cell(c, v)
            runs = cell.runs
            for key in ("mean_ratio", "var_ratio", "ratio_s2"):
                m = median_ratio(runs, key)
                if m is None and key == "ratio_s2" and median_ratio(runs, "var_ratio") is not None:
                    row.append("not recorded")  # probe ran, but before σ was logged
                else:
                    row.append("–" if m is None else f"{m:.3g}")
            if runs:  # the gradient algebra holds either way; a cell that did not train says so
                row[-3] = cell.labelled(row[-3])
        t.rows.append(row)
    recorded = any(median_ratio(grid.column_runs(c), "ratio_s2") is not None for c in columns)
    t.caption = (
        "Median over probe records (task.train.probe_every) and seeds of completed runs; statistics "
        "are per-token means/variances over the hidden dimension, averaged over tokens and norm layers. "
        "First ratio: LayerNorm-simple and Detach variance only re-centre the input gradient (≈ 0, up "
        "to float rounding), DetachNorm and Detach mean only do not (Theorem 1's mean statement). Second "
        "ratio: Var ∂ℓ/∂x / Var ∂ℓ/∂y is mostly 1/σ², the scale of the norm's input, so it differs "
        "between tasks and layers for reasons unrelated to the theorem and must not be read as "
        "'shrinkage'. Third: the σ²-normalized ratio (σ = the norm input's per-token std) that Theorem "
        "1's variance statement is about: 1 for DetachNorm and Detach variance only (up to eps), ≤ 1 for "
        "LayerNorm-simple and Detach mean only, where the σ derivative projects components out of the gradient. "
        + (
            ""
            if recorded
            else "These runs predate the probe's σ record, so the third ratio is 'not "
            "recorded' everywhere: the theorem's variance statement is not tested by these runs. "
        )
        + "For LayerNorm/AdaNorm/RMSNorm/DyT ∂ℓ/∂y is taken after the gain, so their ratios include it; "
        "w/o Norm passes the gradient unchanged (ratios 1)."
    )
    t.notes = [data_sentence(grid, columns)]
    return t
