"""figures/lr_sensitivity: seed 1's validation score against the lr, per task and norm."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Optional

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from ...report.aggregate import NORM_LABELS, data_sentence, norm_sort_key  # noqa: E402
from ...report.style import norm_style  # noqa: E402
from ...rundir import criterion  # noqa: E402


def figure_legend(fig, norms: list[str]) -> None:
    """One legend for the whole figure, every norm drawn in any panel in the norms' order: a task
    re-run for some norms only holds fewer lines than the others, so no one panel's legend will do."""
    lines = {}
    for ax in fig.axes:
        for line, label in zip(*ax.get_legend_handles_labels()):
            lines.setdefault(label, line)
    labels = [NORM_LABELS.get(n, n) for n in sorted(set(norms), key=norm_sort_key)]
    labels = [x for x in labels if x in lines]
    fig.legend([lines[x] for x in labels], labels, fontsize=7, loc="outside right upper")


def lr_figure(sw, out: Path) -> Optional[str]:
    """The lr-sensitivity figure of a tuned.Sweep (passed in: importing tuned here makes a circle)."""
    keys = [k for k in sw.keys() if len(sw.seed1(k)) > 1 and k in sw.preset]  # x is lr / preset lr
    tasks = list(dict.fromkeys(k[0] for k in keys))
    if not tasks:
        return None
    cols = min(4, len(tasks))
    rows = math.ceil(len(tasks) / cols)
    fig, axes = plt.subplots(
        rows, cols, figsize=(3.2 * cols, 2.6 * rows), squeeze=False, layout="constrained"
    )
    for ax, task in zip(axes.flat, tasks):
        for key in [k for k in keys if k[0] == task]:
            pts = sorted(sw.seed1(key).items())
            done = [(lr, criterion(r.summary)[1]) for lr, r in pts if r.status == "completed"]
            xs = [sw.factor(key, lr) for lr, v in done if v is not None]
            ys = [v for _, v in done if v is not None]
            ax.plot(
                xs,
                ys,
                marker="o",
                ms=3,
                label=NORM_LABELS.get(key[1], key[1]),
                **norm_style(key[1]),
            )
            lr = sw.chosen(key)
            if lr is not None and lr in dict(done) and dict(done)[lr] is not None:
                ax.plot(
                    [sw.factor(key, lr)],
                    [dict(done)[lr]],
                    marker="o",
                    ms=7,
                    mfc="none",
                    color=norm_style(key[1])["color"],
                )
            bad = [sw.factor(key, lr) for lr, r in pts if r.status == "diverged"]
            if bad:
                ax.plot(
                    bad, [ax.get_ylim()[1]] * len(bad), "x", ms=6, color=norm_style(key[1])["color"]
                )
        name, _, higher = criterion(
            next(r for k in keys if k[0] == task for r in sw.seed1(k).values()).summary
        )
        ax.set_xscale("log", base=2)
        ticks = sorted({sw.factor(k, lr) for k in keys if k[0] == task for lr in sw.seed1(k)})
        ax.set_xticks(ticks, [f"{f:.2g}×" for f in ticks])
        ax.minorticks_off()
        ax.set_title(f"{task} (valid {name} {'↑' if higher else '↓'})", fontsize=9)
        ax.set_xlabel("lr / preset lr", fontsize=8)
        ax.tick_params(labelsize=7)
        ax.tick_params(
            axis="x", labelrotation=45
        )  # half-octave ticks: upright labels run into each other
    for ax in list(axes.flat)[len(tasks) :]:
        ax.axis("off")
    figure_legend(fig, [k[1] for k in keys])
    (out / "figures").mkdir(parents=True, exist_ok=True)
    for ext in ("png", "pdf"):
        fig.savefig(out / "figures" / f"lr_sensitivity.{ext}", dpi=150)
    plt.close(fig)
    return (
        "Learning-rate sensitivity: seed 1's validation score at its selected checkpoint against the lr as a "
        "multiple of the preset (log scale), one line per norm; a ring = the chosen lr; x at the top of a panel "
        "= diverged. This figure shows the selection itself: seed 1 is the selection seed, whose runs chose "
        "the lrs and are in no reported mean or test. " + data_sentence(sw.grid)
    )
