"""Figures (PNG and PDF) from run curves: mean over seeds with a min-max band.

Every figure has one row per task, so a task's curves are compared only with the same task's;
every axis is labelled with its unit, every norm keeps its colour and line style across figures
(style.py). The caption (what is averaged, which runs were left out, what data each task used)
is returned for the Markdown index, not drawn into the image, where it would be unreadable and
unsearchable.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable, Optional

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from .aggregate import NORM_LABELS, Grid, data_sentence, finite, outside  # noqa: E402
from .axis import setting_rank  # noqa: E402
from .gradstats import probe_records  # noqa: E402
from .overfit import rise_curve  # noqa: E402
from .runs import Run  # noqa: E402
from .style import sweep_style, variant_style  # noqa: E402

X_LABEL = "training step (updates)"


def _series(runs: list[Run], get: Callable[[Run], list[tuple[int, float]]]):
    """(steps, mean, lo, hi) over runs, step by step; a step is averaged over the runs that have it."""
    by_step: dict[int, list[float]] = {}
    for r in runs:
        for s, v in get(r):
            if finite(v):
                by_step.setdefault(s, []).append(v)
    steps = sorted(by_step)
    return (
        steps,
        [sum(by_step[s]) / len(by_step[s]) for s in steps],
        [min(by_step[s]) for s in steps],
        [max(by_step[s]) for s in steps],
    )


def split_loss(split: str):
    return lambda r: [
        (x["step"], x["loss"]) for x in r.curves if x.get("split") == split and "loss" in x
    ]


def probe_key(key: str):
    return lambda r: [(p["step"], p[key]) for p in probe_records(r) if p[key] is not None]


class Panel:
    """One panel of a figure's row: what it plots and on which y scale ("log", or "symlog": linear
    up to ``linthresh``, logarithmic above, for a measure that starts at 0 and may climb by
    orders of magnitude)."""

    def __init__(self, title: str, get, ylabel: str, log=False, linthresh: float = 10.0):
        self.title, self.get, self.ylabel, self.log = title, get, ylabel, log
        self.linthresh = linthresh


# the training loss is cross-entropy with natural logarithms: per token (MT, LM) or per example
LOSS_PANELS = [
    Panel("train loss", split_loss("train"), "train cross-entropy (nats)"),
    Panel("valid loss", split_loss("valid"), "valid cross-entropy (nats)"),
]
# where overfitting lives: how far the valid loss has climbed above its own minimum
# A run whose valid loss climbs far (8000% in a diverging one) would flatten every other curve
# on a linear axis: linear to 10%, logarithmic above, so both a 2% rise and a blow-up read.
RISE_PANEL = Panel(
    "valid loss above its minimum",
    rise_curve,
    "valid loss − its minimum\n(% of minimum; linear to 10%, log above)",
    log="symlog",
)
GRAD_PANELS = [
    Panel(
        "|mean ∂ℓ/∂x| (re-centring)", probe_key("in_absmean"), "|mean ∂ℓ/∂x| (log scale)", log=True
    ),
    Panel("Var ∂ℓ/∂x", probe_key("in_var"), "Var ∂ℓ/∂x (log scale)", log=True),
    Panel(
        "Var ∂ℓ/∂x / Var ∂ℓ/∂y (mostly 1/σ²)",
        probe_key("var_ratio"),
        "variance ratio (log scale)",
        log=True,
    ),
]


def figure(
    grid: Grid,
    key: str,
    title: str,
    norms: Optional[list[str]],
    panels: list[Panel],
    out: Path,
    what: str,
) -> Optional[str]:
    """Draw rows = tasks (with runs of at least one of ``norms``) x ``panels``; write
    out/<key>.png and .pdf; return the caption, or None when there is nothing to compare (a
    figure named for given norms needs runs of two of them)."""
    variants = [v for v in grid.variants(norms) if any(grid.cell(c, v).runs for c in grid.columns)]
    if norms is not None and len({v[0] for v in variants}) < 2:
        return None
    if key in (norms or []) and not any(v[0] == key for v in variants):
        return None  # a figure named after a norm shows that norm
    present = [n for n in norms or [] if any(v[0] == n for v in variants)]
    title = title.format(norms=" vs ".join(NORM_LABELS.get(n, n) for n in present))
    # a norm's default setting ("{}") first, in the legend and in drawing the norm's own style
    first = {n: i for i, n in reversed(list(enumerate(v[0] for v in variants)))}
    variants.sort(key=lambda v: (first[v[0]], setting_rank(json.loads(v[1]))))
    rank = {v: [u for u in variants if u[0] == v[0]].index(v) for v in variants}
    # one norm at several settings: shades of one colour would not tell them apart
    one_norm = len({v[0] for v in variants}) == 1 and len(variants) > 1
    series = {
        (c, v, j): _series([r for r in grid.cell(c, v).runs if r.status == "completed"], panel.get)
        for c in grid.columns
        for v in variants
        for j, panel in enumerate(panels)
    }
    columns = [
        c
        for c in grid.columns
        if any(series[c, v, j][0] for v in variants for j in range(len(panels)))
    ]
    if not columns:
        return None
    left = sorted(
        f"{r.task}/{r.norm}/seed{r.seed} ({r.status})"
        for c in columns
        for v in variants
        for r in grid.cell(c, v).runs
        if r.status != "completed"
    )
    shown = ", ".join(left[:8]) + (f" and {len(left) - 8} more" if len(left) > 8 else "")
    caption = (
        f"{title}. {what} Lines: mean over seeds of completed runs; band: min–max over seeds; x: "
        "training step. "
        + (f"Left out, not completed: {shown}. " if left else "")
        + data_sentence(grid, columns)
    )
    w, h = 4.2 * len(panels), 2.8 * len(columns)
    # constrained layout places the title right above the first row whatever the row count
    fig, axes = plt.subplots(
        len(columns), len(panels), figsize=(w, h), squeeze=False, layout="constrained"
    )
    for i, c in enumerate(columns):
        # an axis column's name is long: task, setting and panel on lines of their own keep
        # neighbouring titles apart (the whole row alike)
        name = f"{c} (not learning)" if outside(grid, c) else c  # its caption says why
        long = len(name) + max(len(p.title) for p in panels) > 45
        for j, panel in enumerate(panels):
            ax = axes[i][j]
            for v in variants:
                steps, mean, lo, hi = series[c, v, j]
                if not steps:
                    continue
                n = sum(r.status == "completed" for r in grid.cell(c, v).runs)
                style = sweep_style(rank[v]) if one_norm else variant_style(v[0], rank[v])
                untrained = ", did not train" if grid.cell(c, v).untrained else ""
                ax.plot(steps, mean, lw=1.4, label=f"{grid.label(v)} (n={n}){untrained}", **style)
                ax.fill_between(steps, lo, hi, color=style["color"], alpha=0.15, lw=0)
            if panel.log == "symlog" and ax.has_data():
                ax.set_yscale("symlog", linthresh=panel.linthresh)
            elif panel.log and ax.has_data():
                ax.set_yscale("log")
            head = (
                name.replace(" [", "\n[") + "\n" + panel.title if long else f"{name}: {panel.title}"
            )
            ax.set_title(head, fontsize=9)
            ax.set_xlabel(X_LABEL, fontsize=8)
            ax.set_ylabel(panel.ylabel, fontsize=8)
            ax.tick_params(labelsize=7, which="both")
            ax.grid(alpha=0.3, lw=0.5)
            if (
                ax.has_data() and j == len(panels) - 1
            ):  # one legend per task, outside its last panel
                ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0), handlelength=3)
    fig.suptitle(title, fontsize=11)
    out.mkdir(parents=True, exist_ok=True)
    for ext, kw in (
        ("png", {"dpi": 120}),
        ("pdf", {"metadata": {"CreationDate": None, "ModDate": None}}),
    ):
        fig.savefig(
            out / f"{key}.{ext}", bbox_inches="tight", **kw
        )  # grows to hold the outside legends
    plt.close(fig)
    return caption


# key -> (title, norms (None = all), panels, what the figure shows); "{norms}" in a title is the
# figure's norms that have runs, so a title never names a norm the figure does not show
FIGURES = {
    "curves": ("Train and valid loss per norm", None, LOSS_PANELS, "All norm variants."),
    "overfitting": (
        "Overfitting: {norms}",
        ["layernorm", "layernorm_simple"],
        LOSS_PANELS + [RISE_PANEL],
        "The paper (its Enwiki8 figure): with bias and gain the train loss is lower and the valid "
        "loss ends higher. The third panel shows the valid loss relative to its own minimum, on a "
        "y axis linear up to 10% and logarithmic above: the rise after it is where overfitting "
        "shows, independent of when each norm peaked.",
    ),
    "detachnorm": (
        "{norms}",
        ["detachnorm", "layernorm_simple", "none"],
        LOSS_PANELS,
        "The paper (Table 2): normalizing forward without the mean/variance "
        "derivatives (DetachNorm) loses to LayerNorm-simple.",
    ),
    "adanorm": (
        "{norms}",
        ["adanorm", "layernorm"],
        LOSS_PANELS,
        "The paper (PTB, De-En figures): AdaNorm's valid loss rises less late in training.",
    ),
    "grad_stats": (
        "Theorem 1: gradient statistics per norm variant",
        None,
        GRAD_PANELS,
        "From the gradient probe (grad/all/...: per-token statistics over the hidden dimension, "
        "averaged over tokens and norm layers). LayerNorm-simple and Detach variance only give a "
        "re-centred input gradient (|mean| at float-rounding level); DetachNorm and Detach mean only "
        "do not. The variance ratio mostly tracks 1/σ² of the norm's input, not Theorem 1's shrinkage; "
        "the σ²-normalized ratio is in the grad_stats table where the probe recorded σ.",
    ),
}
