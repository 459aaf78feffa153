"""normlab.norms: every norm variant, one registry, one construction point."""

from .convert import convert_norms
from .layers import Norm
from .optim import param_groups
from .probe import GradProbe, grad_stats
from .registry import NORMS, build_norm, norm_factory, norm_options

__all__ = [
    "NORMS",
    "build_norm",
    "norm_factory",
    "norm_options",
    "convert_norms",
    "param_groups",
    "GradProbe",
    "grad_stats",
    "Norm",
]
