"""NORMS: the one registry of norm variants, and build_norm, the one construction point.

A norm is registered where it is written, by name and with the ranges of its options::

    @register_norm("mynorm", alpha=">0")
    class MyNorm(Norm):
        def __init__(self, dim, alpha=1.0, channels_first=False, impl="fused"): ...

(or on a factory function ``(dim, **options) -> nn.Module``). Its options are the parameters of
that signature after ``dim``; ``normlab/configs/norm/<name>.yaml`` gives their values and the
norm's look in reports. Norms are found in three places: ``builtin.py``, every module of the
``normlab.norms.variants`` package, and the ``normlab.norms`` entry points of installed packages
(``discover``), so a norm of one's own package runs without editing normlab.
"""

from __future__ import annotations

import inspect
import math
from typing import Callable

from torch import nn

from .. import plugins
from ..plugins import qualname
from . import layers as L

NORMS: dict[str, Callable[..., nn.Module]] = {}
RANGES: dict[str, dict[str, object]] = {}  # option -> a _RULES key or its allowed values
ENTRY_POINTS = "normlab.norms"

_RULES = {
    ">0": (lambda v: v > 0, "> 0"),
    ">=0": (lambda v: v >= 0, ">= 0"),
    "[0,1]": (lambda v: 0 <= v <= 1, "in [0, 1]"),
}


def check(**ranges) -> None:
    """``check(C=(C, ">0"), numerics=(n, ("paper", "official")))``: a bad value raises ValueError
    naming the option and the range, before any model is built."""
    for key, (value, rule) in ranges.items():
        if isinstance(rule, tuple):
            if value not in rule:
                raise ValueError(f"norm.options.{key}={value!r} must be one of {list(rule)}")
            continue
        test, text = _RULES[rule]
        if (
            isinstance(value, bool)
            or not isinstance(value, (int, float))
            or not math.isfinite(value)
            or not test(value)
        ):
            raise ValueError(
                f"norm.options.{key}={value!r} is out of range: it must be a number {text}"
            )


def register_norm(name: str, **ranges):
    """Decorator: register a norm class or factory as ``name``; ``ranges`` maps an option to one
    of ">0", ">=0", "[0,1]" or to a tuple of its allowed values, checked before every build. A
    second, different norm of one name is an error (a plugin must not silently replace a shipped
    norm)."""
    ranges = {k: tuple(r) if isinstance(r, (list, tuple)) else r for k, r in ranges.items()}
    bad = {k: r for k, r in ranges.items() if not isinstance(r, tuple) and r not in _RULES}
    if bad:
        raise ValueError(
            f"register_norm({name!r}): unknown range(s) {bad}; use one of {list(_RULES)}"
        )

    def add(factory):
        old = NORMS.get(name)
        if old is not None and qualname(old) != qualname(factory):
            raise ValueError(
                f"norm {name!r} is registered twice: {qualname(old)} and {qualname(factory)}"
            )
        params = _params(factory)
        if "impl" in params:  # every Norm's fast-path switch, checked before any build
            ranges.setdefault("impl", L.IMPLS)
        unknown = sorted(set(ranges) - set(params))
        if unknown:
            raise ValueError(f"register_norm({name!r}): ranges for options it lacks: {unknown}")
        NORMS[name], RANGES[name] = factory, dict(ranges)
        return factory

    return add


def _params(factory) -> list[str]:
    return [p for p in inspect.signature(factory).parameters if p != "dim"]


def discover() -> list[str]:
    """Import the modules of ``normlab.norms.variants`` and the installed packages' ``normlab.norms``
    entry points (each names a module that registers its norms, or a norm class/factory registered
    under the entry point's name; a broken one is named on stderr and skipped). Returns the names
    it added."""
    from . import variants

    return plugins.discover(variants, NORMS, register_norm, ENTRY_POINTS, "norm")


NORM_TYPES = (L.Norm, nn.LayerNorm, nn.RMSNorm)


def norm_options(name: str) -> list[str]:
    return _params(_factory(name))


def _factory(name: str):
    if name not in NORMS:
        raise ValueError(f"unknown norm {name!r}; valid names: {', '.join(NORMS)}")
    return NORMS[name]


def validate(name: str, **options) -> None:
    """The checks of ``build_norm`` without building: the name, unknown options, declared ranges."""
    factory = _factory(name)
    valid = norm_options(name)
    unknown = sorted(set(options) - set(valid))
    if unknown:
        raise ValueError(f"norm {name!r} has no option(s) {unknown}; valid options: {valid}")
    bound = inspect.signature(factory).bind_partial(**options)
    bound.apply_defaults()
    check(**{k: (bound.arguments[k], r) for k, r in RANGES[name].items() if k in bound.arguments})


def build_norm(name: str, dim: int, **options) -> nn.Module:
    """Build norm variant ``name`` over ``dim`` features. Unknown names/options raise ValueError."""
    validate(name, **options)
    return NORMS[name](dim, **options)


def norm_factory(name: str, **options) -> Callable[[int], nn.Module]:
    """A ``dim -> module`` callable for models; validates name and options now, not at build."""
    validate(name, **options)

    def make(dim: int, **extra) -> nn.Module:
        return build_norm(name, dim, **{**options, **extra})

    make.norm_name = name
    return make
