"""The paper's three curve figures in the paper's layout (docs/paper.md), from our runs.

- Enwiki8, LayerNorm vs LayerNorm-simple: one plot, train BPC on the left axis and valid BPC on
  the right axis (the paper's twin-axis overfitting figure).
- PTB parsing and IWSLT14 De-En, AdaNorm vs LayerNorm: train loss and valid loss side by side.

Each needs runs of both norms on its task; otherwise it is not drawn. Colours and dash patterns
are the ones every normlab figure uses (style.py); in the twin-axis plot train is thin and valid
thick, so a curve's axis can be told from its width (the legend says which).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Optional

from ...report.aggregate import NORM_LABELS, Cell, Grid, data_sentence
from ...report.figures import X_LABEL, _series, plt, split_loss
from ...report.style import norm_style


def _bpc(split: str):
    """Per-byte cross-entropy in bits: the train loss is in nats (÷ ln 2); valid records carry bpc."""
    if split == "train":
        return lambda r: [(s, v / math.log(2)) for s, v in split_loss("train")(r)]
    return lambda r: [
        (x["step"], x["bpc"]) for x in r.curves if x.get("split") == "valid" and "bpc" in x
    ]


# key -> (task, (norm a, norm b), title, what the paper shows)
PAPER_FIGURES = {
    "paper_overfitting_enwik8": (
        "enwik8",
        ("layernorm", "layernorm_simple"),
        "Enwiki8: LayerNorm vs LayerNorm-simple (the paper's layout)",
        "The paper: LayerNorm's train BPC stays below LayerNorm-simple's while the valid "
        "curves cross late, after which LayerNorm-simple is lower.",
    ),
    "paper_adanorm_ptb": (
        "ptb",
        ("layernorm", "adanorm"),
        "PTB parsing: AdaNorm vs LayerNorm (the paper's layout)",
        "The paper: train losses almost overlap; both valid losses reach their minimum early "
        "and rise, AdaNorm's less.",
    ),
    "paper_adanorm_iwslt14": (
        "iwslt14_de_en",
        ("layernorm", "adanorm"),
        "IWSLT14 De-En: AdaNorm vs LayerNorm (the paper's layout)",
        "The paper: valid loss reaches its minimum mid-training and drifts up, AdaNorm's "
        "ending lower.",
    ),
}


def _default_cell(grid: Grid, task: str, norm: str) -> Cell:
    column = next((c for c in grid.columns if c.split("@")[0] == task), None)
    return Cell() if column is None else grid.norm_cell(column, norm)


def paper_figure(grid: Grid, key: str, out: Path) -> Optional[str]:
    """Draw ``key`` into out/<key>.png/.pdf and return its caption, or None without the runs."""
    task, norms, title, what = PAPER_FIGURES[key]
    cells = {n: _default_cell(grid, task, n) for n in norms}
    runs = {n: [r for r in c.runs if r.status == "completed"] for n, c in cells.items()}
    if not all(runs.values()):
        return None
    twin = task == "enwik8"
    fig, axes = plt.subplots(
        1,
        1 if twin else 2,
        figsize=(5.6 if twin else 9.0, 3.4),
        squeeze=False,
        layout="constrained",
    )
    if twin:
        left = axes[0][0]
        right = left.twinx()
        parts = [(left, "train", _bpc("train"), 1.0), (right, "valid", _bpc("valid"), 2.2)]
        left.set_ylabel("train BPC (bits per byte)", fontsize=8)
        right.set_ylabel("valid BPC (bits per byte)", fontsize=8)
    else:
        parts = [
            (axes[0][0], "train", split_loss("train"), 1.4),
            (axes[0][1], "valid", split_loss("valid"), 1.4),
        ]
        for ax, split, _, _ in parts:
            ax.set_ylabel(f"{split} cross-entropy (nats)", fontsize=8)
            ax.set_title(f"{split} loss", fontsize=9)
    handles = []
    for ax, split, get, width in parts:
        for n in norms:
            steps, mean, lo, hi = _series(runs[n], get)
            style = norm_style(n)
            # one axis per split: the panel title names the split; the twin axes need it in the legend
            label = f"{NORM_LABELS.get(n, n)}{f' {split}' if twin else ''} (n={len(runs[n])})" + (
                ", did not train" if cells[n].untrained else ""
            )
            (line,) = ax.plot(steps, mean, lw=width, label=label, **style)
            ax.fill_between(steps, lo, hi, color=style["color"], alpha=0.12, lw=0)
            if twin or ax is parts[-1][0]:
                handles.append(line)
        ax.set_xlabel(X_LABEL, fontsize=8)
        ax.tick_params(labelsize=7)
        ax.grid(alpha=0.3, lw=0.5)
    axes[0][-1].legend(handles=handles, fontsize=7, loc="upper right")
    fig.suptitle(title, fontsize=10)
    out.mkdir(parents=True, exist_ok=True)
    for ext, kw in (
        ("png", {"dpi": 120}),
        ("pdf", {"metadata": {"CreationDate": None, "ModDate": None}}),
    ):
        fig.savefig(out / f"{key}.{ext}", bbox_inches="tight", **kw)
    plt.close(fig)
    return (
        f"{title}. {what} Ours: mean over seeds of completed runs at the norms' default settings (band: "
        "min–max); x is training steps where the paper plots epochs, and our mini scale and data differ, so "
        "compare the shapes, not the numbers. "
        + data_sentence(grid, [c for c in grid.columns if c.split("@")[0] == task])
    )
