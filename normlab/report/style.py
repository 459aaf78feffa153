"""One colour and line style per norm, the same in every figure (a norm never changes colour
between the overfitting, DetachNorm, AdaNorm and gradient figures), chosen so that the variants a
figure compares differ in both colour and dash pattern and stay apart in greyscale print."""
from __future__ import annotations

# norm -> (matplotlib colour, line style)
NORM_STYLES: dict[str, tuple[str, object]] = {
    "none": ("black", ":"),                         # the baseline: plain dotted black
    "layernorm": ("tab:blue", "-"),
    "layernorm_simple": ("tab:orange", "--"),
    "detachnorm": ("tab:red", "-."),
    "detach_mean": ("tab:purple", (0, (3, 1, 1, 1, 1, 1))),
    "detach_var": ("tab:brown", (0, (6, 2))),
    "adanorm": ("tab:green", (0, (1, 1))),
    "rmsnorm": ("tab:cyan", "--"),
    "dyt": ("tab:pink", "-."),
    "scalenorm": ("tab:olive", ":"),
    "derf": ("tab:gray", (0, (5, 1, 1, 1))),
    "batchnorm": ("goldenrod", (0, (2, 2))),
}
UNKNOWN = ("dimgray", (0, (1, 3)))


def norm_style(norm: str) -> dict:
    """matplotlib keyword arguments (color, linestyle) for ``norm``."""
    color, ls = NORM_STYLES.get(norm, UNKNOWN)
    return {"color": color, "linestyle": ls}
