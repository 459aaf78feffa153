"""One colour and line style per norm, the same in every figure (a norm never changes colour
between the overfitting, DetachNorm, AdaNorm and gradient figures), chosen so that the variants a
figure compares differ in both colour and dash pattern and stay apart in greyscale print."""

from __future__ import annotations

from .norm_cards import COLORS, DASHES

# A norm's colour and dash are declared with it (its config's display section, norm_cards.py).
UNKNOWN = ("dimgray", (0, (1, 3)))


def norm_style(norm: str) -> dict:
    """matplotlib keyword arguments (color, linestyle) for ``norm``."""
    return {"color": COLORS.get(norm, UNKNOWN[0]), "linestyle": DASHES.get(norm, UNKNOWN[1])}


# A norm's further settings (two lrs, AdaNorm's C=1 and C=2) keep the norm's colour family and
# dash, and differ in a second and third channel: a marker and the colour's shade. The norm's
# default setting (or, without one, its first) is drawn exactly as norm_style says.
SETTING_MARKERS = ["", "o", "s", "^", "D", "v", "P", "X", "*", "h"]
SETTING_SHADES = [0.0, -0.35, 0.35, -0.55, 0.55, -0.2, 0.2, -0.7, 0.7, -0.45]


def shade(color: str, amount: float) -> str:
    """``color`` darkened (amount < 0, towards black) or lightened (> 0, towards white), as hex."""
    from matplotlib.colors import to_hex, to_rgb

    target = 1.0 if amount > 0 else 0.0
    return to_hex(tuple(c + (target - c) * abs(amount) for c in to_rgb(color)))


def variant_style(norm: str, rank: int) -> dict:
    """matplotlib keyword arguments for the ``rank``-th setting of ``norm`` in a figure (0: its
    default). Beyond len(SETTING_MARKERS) settings the looks repeat."""
    style = norm_style(norm)
    if rank == 0:
        return style
    i = rank % len(SETTING_MARKERS) or 1
    return {
        **style,
        "color": shade(style["color"], SETTING_SHADES[i]),
        "marker": SETTING_MARKERS[i],
        "markevery": 0.12,
        "markersize": 4,
    }


# A figure of one norm at several settings (a placement sweep) has no second norm to tell its
# lines apart: each setting gets a colour of its own (matplotlib's tab10, made for categories) and a
# dash pattern of its own, so the lines stay apart in greyscale too.
SWEEP_COLORS = [
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#d62728",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#7f7f7f",
    "#bcbd22",
    "#17becf",
]
SWEEP_DASHES = ["-", (0, (6, 2)), (0, (1, 1.5)), (0, (6, 2, 1, 2)), (0, (3, 1, 1, 1, 1, 1))]


def sweep_style(i: int) -> dict:
    """matplotlib keyword arguments for the ``i``-th setting of a one-norm sweep figure."""
    return {
        "color": SWEEP_COLORS[i % len(SWEEP_COLORS)],
        "linestyle": SWEEP_DASHES[i % len(SWEEP_DASHES)],
    }
