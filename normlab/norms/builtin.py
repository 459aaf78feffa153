"""The norms normlab ships: each registered by name with the ranges of its options.

A factory (or a layer class, whose ``__init__`` then names the options) takes ``dim`` and the
options of ``normlab/configs/norm/<name>.yaml``; ``impl`` picks "fused" (the fast path, default) or
"reference" (the plain autograd math of functional.py), e.g. ``norm.options.impl=reference``.
"""

from __future__ import annotations

from . import layers as L
from .functional import NUMERICS
from .registry import register_norm


@register_norm("none")
def _none(dim, channels_first=False, impl="fused"):
    return L.NoNorm(dim, channels_first=channels_first, impl=impl)


def _layernorm_family(name: str, affine: bool, detach_mean: bool = False, detach_var: bool = False):
    """The factory of one member of Xu et al.'s LayerNorm family: which affine, which statistics
    detached from the gradient."""

    def factory(dim, eps=1e-5, numerics="paper", channels_first=False, impl="fused"):
        return L.LayerNormFamily(
            dim,
            affine=affine,
            detach_mean=detach_mean,
            detach_var=detach_var,
            eps=eps,
            numerics=numerics,
            channels_first=channels_first,
            impl=impl,
        )

    factory.__qualname__ = f"_layernorm_family[{name}]"
    return register_norm(name, eps=">0", numerics=NUMERICS)(factory)


_layernorm_family("layernorm", affine=True)
_layernorm_family("layernorm_simple", affine=False)
_layernorm_family("detachnorm", affine=False, detach_mean=True, detach_var=True)
_layernorm_family("detach_mean", affine=False, detach_mean=True)
_layernorm_family("detach_var", affine=False, detach_var=True)


# phi(y) = C(1 - ky): a scale C > 0. C=1 by default: at init the output scale matches LayerNorm's
# unit gain, so LN vs AdaNorm compares the phi shape at equal scale. The official script's C=2 is
# set per experiment.
@register_norm("adanorm", C=">0", k=">=0", eps=">0", numerics=NUMERICS)
def _adanorm(dim, C=1.0, k=0.1, eps=1e-5, numerics="paper", channels_first=False, impl="fused"):
    return L.AdaNorm(
        dim, C=C, k=k, eps=eps, numerics=numerics, channels_first=channels_first, impl=impl
    )


register_norm("rmsnorm", eps=">0", numerics=NUMERICS, unit_offset=(False, True))(L.RMSNorm)


# tanh(alpha x): alpha <= 0 flips or flattens it
register_norm("dyt", alpha_init=">0")(L.DyT)
register_norm("scalenorm", eps=">0")(L.ScaleNorm)
register_norm("derf", alpha_init=">0")(L.Derf)
register_norm("batchnorm", eps=">0", momentum="[0,1]")(L.BatchNorm)
