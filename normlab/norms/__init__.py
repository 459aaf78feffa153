"""normlab.norms: every norm variant, one registry, one construction point."""

from . import builtin  # noqa: F401  (registers the shipped norms)
from .convert import convert_norms
from .layers import Norm
from .optim import param_groups
from .probe import GradProbe, grad_stats
from .registry import NORMS, build_norm, check, discover, norm_factory, norm_options, register_norm

__all__ = [
    "NORMS",
    "build_norm",
    "check",
    "discover",
    "norm_factory",
    "norm_options",
    "register_norm",
    "convert_norms",
    "param_groups",
    "GradProbe",
    "grad_stats",
    "Norm",
]

# Last, once every name above is bound: a plugin module imports them from this package.
discover()
