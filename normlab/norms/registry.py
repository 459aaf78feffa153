"""NORMS: the one registry of norm variants, and build_norm, the one construction point.

Every factory takes ``impl``: "fused" (default, the fast path of fused*.py) or "reference" (the
plain autograd math of functional.py), e.g. ``norm.options.impl=reference`` on the command line.
"""

from __future__ import annotations

import inspect
import math
from typing import Callable

from torch import nn

from . import layers as L


def check(**ranges) -> None:
    """Range checks a norm declares in its factory: ``check(C=(C, ">0"), k=(k, ">=0"))``. A bad
    value raises ValueError naming the option and the range, before any model is built."""
    tests = {
        ">0": (lambda v: v > 0, "> 0"),
        ">=0": (lambda v: v >= 0, ">= 0"),
        "[0,1]": (lambda v: 0 <= v <= 1, "in [0, 1]"),
    }
    for key, (value, rule) in ranges.items():
        if (
            isinstance(value, bool)
            or not isinstance(value, (int, float))
            or not math.isfinite(value)
            or not tests[rule][0](value)
        ):
            raise ValueError(
                f"norm.options.{key}={value!r} is out of range: it must be a number {tests[rule][1]}"
            )


def _none(dim, channels_first=False, impl="fused"):
    return L.NoNorm(dim, channels_first=channels_first, impl=impl)


def _layernorm(dim, eps=1e-5, numerics="paper", channels_first=False, impl="fused"):
    check(eps=(eps, ">0"))
    return L.LayerNormFamily(
        dim, affine=True, eps=eps, numerics=numerics, channels_first=channels_first, impl=impl
    )


def _layernorm_simple(dim, eps=1e-5, numerics="paper", channels_first=False, impl="fused"):
    check(eps=(eps, ">0"))
    return L.LayerNormFamily(
        dim, affine=False, eps=eps, numerics=numerics, channels_first=channels_first, impl=impl
    )


def _detachnorm(dim, eps=1e-5, numerics="paper", channels_first=False, impl="fused"):
    check(eps=(eps, ">0"))
    return L.LayerNormFamily(
        dim,
        affine=False,
        detach_mean=True,
        detach_var=True,
        eps=eps,
        numerics=numerics,
        channels_first=channels_first,
        impl=impl,
    )


def _detach_mean(dim, eps=1e-5, numerics="paper", channels_first=False, impl="fused"):
    check(eps=(eps, ">0"))
    return L.LayerNormFamily(
        dim,
        affine=False,
        detach_mean=True,
        eps=eps,
        numerics=numerics,
        channels_first=channels_first,
        impl=impl,
    )


def _detach_var(dim, eps=1e-5, numerics="paper", channels_first=False, impl="fused"):
    check(eps=(eps, ">0"))
    return L.LayerNormFamily(
        dim,
        affine=False,
        detach_var=True,
        eps=eps,
        numerics=numerics,
        channels_first=channels_first,
        impl=impl,
    )


def _adanorm(dim, C=1.0, k=0.1, eps=1e-5, numerics="paper", channels_first=False, impl="fused"):
    check(C=(C, ">0"), k=(k, ">=0"), eps=(eps, ">0"))  # phi(y) = C(1 - ky): a scale C > 0
    # C=1 by default: at init the output scale matches LayerNorm's unit gain, so LN vs AdaNorm
    # compares the phi shape at equal scale. The official script's C=2 is set per experiment.
    return L.AdaNorm(
        dim, C=C, k=k, eps=eps, numerics=numerics, channels_first=channels_first, impl=impl
    )


def _rmsnorm(dim, eps=1e-5, affine=True, numerics="paper", channels_first=False, impl="fused"):
    check(eps=(eps, ">0"))
    return L.RMSNorm(
        dim, eps=eps, affine=affine, numerics=numerics, channels_first=channels_first, impl=impl
    )


def _dyt(dim, alpha_init=0.5, affine=True, channels_first=False, impl="fused"):
    check(alpha_init=(alpha_init, ">0"))  # tanh(alpha x): alpha <= 0 flips or flattens it
    return L.DyT(
        dim, alpha_init=alpha_init, affine=affine, channels_first=channels_first, impl=impl
    )


def _scalenorm(dim, eps=1e-5, channels_first=False, impl="fused"):
    check(eps=(eps, ">0"))
    return L.ScaleNorm(dim, eps=eps, channels_first=channels_first, impl=impl)


def _derf(dim, alpha_init=0.5, shift_init=0.0, affine=True, channels_first=False, impl="fused"):
    check(alpha_init=(alpha_init, ">0"))
    return L.Derf(
        dim,
        alpha_init=alpha_init,
        shift_init=shift_init,
        affine=affine,
        channels_first=channels_first,
        impl=impl,
    )


def _batchnorm(dim, eps=1e-5, momentum=0.1, channels_first=False, impl="fused"):
    check(eps=(eps, ">0"), momentum=(momentum, "[0,1]"))
    return L.BatchNorm(dim, eps=eps, momentum=momentum, channels_first=channels_first, impl=impl)


NORMS: dict[str, Callable[..., nn.Module]] = {
    "none": _none,
    "layernorm": _layernorm,
    "layernorm_simple": _layernorm_simple,
    "detachnorm": _detachnorm,
    "detach_mean": _detach_mean,
    "detach_var": _detach_var,
    "adanorm": _adanorm,
    "rmsnorm": _rmsnorm,
    "dyt": _dyt,
    "scalenorm": _scalenorm,
    "derf": _derf,
    "batchnorm": _batchnorm,
}

NORM_TYPES = (L.Norm, nn.LayerNorm, nn.RMSNorm)


def norm_options(name: str) -> list[str]:
    params = inspect.signature(_factory(name)).parameters
    return [p for p in params if p != "dim"]


def _factory(name: str):
    if name not in NORMS:
        raise ValueError(f"unknown norm {name!r}; valid names: {', '.join(NORMS)}")
    return NORMS[name]


def build_norm(name: str, dim: int, **options) -> nn.Module:
    """Build norm variant ``name`` over ``dim`` features. Unknown names/options raise ValueError."""
    factory = _factory(name)
    valid = norm_options(name)
    unknown = sorted(set(options) - set(valid))
    if unknown:
        raise ValueError(f"norm {name!r} has no option(s) {unknown}; valid options: {valid}")
    return factory(dim, **options)


def norm_factory(name: str, **options) -> Callable[[int], nn.Module]:
    """A ``dim -> module`` callable for models; validates name and options now, not at build."""
    build_norm(name, 4, **options)

    def make(dim: int, **extra) -> nn.Module:
        return build_norm(name, dim, **{**options, **extra})

    make.norm_name = name
    return make
