"""The S-curve figure (DyT's Figure 2) of one run: a panel per recorded norm layer, the layer's
input against its output, one colour per channel, with tanh for scale (normlab.norms.scurve
writes the record, scurve.json)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def plot(record: dict, path: Path, title: str = "") -> Path:
    """Draw ``record`` (normlab.norms.scurve.collect's) to ``path`` (PNG); returns the path."""
    layers = record["layers"]
    cols = min(4, max(1, len(layers)))
    rows = math.ceil(len(layers) / cols) or 1
    fig, axes = plt.subplots(rows, cols, figsize=(3.2 * cols, 3.0 * rows), squeeze=False)
    cmap = plt.get_cmap("tab10")
    channels = record.get("channels") or []
    for ax, layer in zip(axes.flat, layers):
        for k, c in enumerate(channels):
            pts = [(x, y) for x, y, ch in zip(layer["x"], layer["y"], layer["channel"]) if ch == c]
            if pts:
                xs, ys = zip(*pts)
                ax.scatter(xs, ys, s=3, alpha=0.5, color=cmap(k % 10), label=f"channel {c}")
        lo, hi = min(layer["x"], default=-1), max(layer["x"], default=1)
        grid = [lo + (hi - lo) * i / 100 for i in range(101)]
        ax.plot(grid, [math.tanh(v) for v in grid], color="black", lw=0.8, ls="--", label="tanh(x)")
        ax.set_title(f"{layer['name']}\n(norm {layer['index'] + 1} of {layer['of']})", fontsize=8)
        ax.set_xlabel("norm input x")
        ax.set_ylabel("norm output y")
    for ax in list(axes.flat)[len(layers) :]:
        ax.axis("off")
    if layers:
        axes.flat[0].legend(fontsize=6, markerscale=3)
    if title:
        fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def from_run(run_dir: Path) -> Path:
    """Draw a run's scurve.json to figures/scurve.png beside it."""
    run_dir = Path(run_dir)
    record = json.loads((run_dir / "scurve.json").read_text())
    return plot(record, run_dir / "figures" / "scurve.png", record.get("title", ""))
