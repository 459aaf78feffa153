"""Norm modules. Each wraps one function of ``functional.py`` plus its parameters.

Every module normalizes over the last dimension, or over dim 1 of a channels-first tensor
(N, C, ...) when built with ``channels_first=True`` (the MNIST CNN).

``impl="fused"`` (the default) runs the variant's fast path, affine included: on CUDA
``cuda.py`` (torch's kernels or compiled reference math), on CPU the C++ kernels of
``native.py``, elsewhere (or without a compiler) the tensor-op paths of ``fused.py`` and
``fused_elementwise.py``; ``impl="reference"`` runs the plain math of
``functional.py`` through autograd. Both compute the same function and gradients; the reference
is what tests and benchmarks compare against, and it supports double backward.
"""

from __future__ import annotations

import torch
from torch import nn

from . import cuda, fused, fused_elementwise, fused_scalenorm
from . import functional as F

IMPLS = ("fused", "reference")


class Norm(nn.Module):
    """Base: optional per-channel affine (gain g, bias b), channels-first handling, impl choice."""

    def __init__(
        self,
        dim: int,
        gain: bool = False,
        bias: bool = False,
        channels_first: bool = False,
        impl: str = "fused",
    ):
        super().__init__()
        if impl not in IMPLS:
            raise ValueError(f"impl must be one of {IMPLS}, got {impl!r}")
        self.dim = dim
        self.channels_first = channels_first
        self.impl = impl
        self.weight = nn.Parameter(torch.ones(dim)) if gain else None
        self.bias = nn.Parameter(torch.zeros(dim)) if bias else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if torch.is_autocast_enabled(x.device.type):
            # Statistics in fp32 under mixed precision: a bf16 mean of values near 1000 is off by
            # up to 2, and the reference math's matmul-free ops would otherwise run in x's dtype.
            with torch.autocast(x.device.type, enabled=False):
                return self._run(x.float()).to(x.dtype)
        return self._run(x)

    def _run(self, x: torch.Tensor) -> torch.Tensor:
        if self.channels_first:
            x = x.movedim(1, -1)
        if x.shape[-1] != self.dim:
            raise ValueError(
                f"{type(self).__name__}(dim={self.dim}) got a tensor with {x.shape[-1]} features"
            )
        y = self.on_cuda(x) if self.impl == "fused" and cuda.active(x) else None
        if y is None:
            y = self.fused(x) if self.impl == "fused" else self.reference(x)
        return y.movedim(-1, 1) if self.channels_first else y

    def reference(self, x: torch.Tensor) -> torch.Tensor:
        y = self.normalize(x)
        if self.weight is not None:
            y = y * self.weight
        if self.bias is not None:
            y = y + self.bias
        return y

    def fused(self, x: torch.Tensor) -> torch.Tensor:
        """The fast path, affine included; variants without one run the reference."""
        return self.reference(x)

    def on_cuda(self, x: torch.Tensor):
        """The CUDA path (cuda.py), affine included, or None to run ``fused``."""
        return None

    def extra_repr(self) -> str:
        return f"{self.dim}, affine=({self.weight is not None}, {self.bias is not None}), impl={self.impl}"


class NoNorm(Norm):
    def __init__(self, dim: int, channels_first: bool = False, impl: str = "fused"):
        super().__init__(dim, channels_first=channels_first, impl=impl)

    def forward(self, x):  # identity, without the shape round-trip
        return x


class LayerNormFamily(Norm):
    """LayerNorm, LayerNorm-simple, DetachNorm and the detach-mean/var variants (Xu et al. 2019)."""

    def __init__(
        self,
        dim,
        affine=True,
        detach_mean=False,
        detach_var=False,
        eps=1e-5,
        numerics="paper",
        channels_first=False,
        impl="fused",
    ):
        if numerics not in F.NUMERICS:
            raise ValueError(f"numerics must be one of {F.NUMERICS}, got {numerics!r}")
        super().__init__(dim, gain=affine, bias=affine, channels_first=channels_first, impl=impl)
        self.eps, self.numerics = eps, numerics
        self.detach_mean, self.detach_var = detach_mean, detach_var

    def normalize(self, x):
        return F.ln_simple(x, self.eps, self.detach_mean, self.detach_var, self.numerics)

    def fused(self, x):
        return fused.layer_norm(
            x, self.weight, self.bias, self.eps, self.numerics, self.detach_mean, self.detach_var
        )

    def on_cuda(self, x):
        return cuda.layernorm(self, x)

    def extra_repr(self):
        return (
            super().extra_repr() + f", eps={self.eps}, numerics={self.numerics}, "
            f"detach_mean={self.detach_mean}, detach_var={self.detach_var}"
        )


class AdaNorm(Norm):
    """z = C(1 - k y) y with y = LN-simple(x) and phi detached. No learnable parameters."""

    def __init__(
        self, dim, C=1.0, k=0.1, eps=1e-5, numerics="paper", channels_first=False, impl="fused"
    ):
        if numerics not in F.NUMERICS:
            raise ValueError(f"numerics must be one of {F.NUMERICS}, got {numerics!r}")
        super().__init__(dim, channels_first=channels_first, impl=impl)
        self.C, self.k, self.eps, self.numerics = C, k, eps, numerics

    def normalize(self, x):
        return F.adanorm(x, self.C, self.k, self.eps, self.numerics)

    def fused(self, x):
        return fused.adanorm(x, self.C, self.k, self.eps, self.numerics)

    def on_cuda(self, x):
        return cuda.adanorm(self, x)

    def extra_repr(self):
        return (
            super().extra_repr()
            + f", C={self.C}, k={self.k}, eps={self.eps}, numerics={self.numerics}"
        )


class RMSNorm(Norm):
    """x / rms(x) * g. ``unit_offset``: the gain is stored as w with g = 1 + w, w starting at 0
    (Gemma's RMSNorm)."""

    def __init__(
        self,
        dim,
        eps=1e-5,
        affine=True,
        unit_offset=False,
        numerics="paper",
        channels_first=False,
        impl="fused",
    ):
        if numerics not in F.NUMERICS:
            raise ValueError(f"numerics must be one of {F.NUMERICS}, got {numerics!r}")
        super().__init__(dim, gain=affine, channels_first=channels_first, impl=impl)
        self.eps, self.numerics, self.unit_offset = eps, numerics, bool(unit_offset and affine)
        if self.unit_offset:
            with torch.no_grad():
                self.weight.zero_()

    @property
    def gain(self):
        """The gain the output is multiplied by (None without affine)."""
        return self.weight + 1 if self.unit_offset else self.weight

    def normalize(self, x):
        return F.rmsnorm(x, self.eps, self.numerics)

    def reference(self, x):
        g = self.gain
        y = self.normalize(x)
        return y if g is None else y * g

    def fused(self, x):
        return fused.rmsnorm(x, self.gain, self.eps, self.numerics)

    def on_cuda(self, x):
        return cuda.rmsnorm(self, x)


class ScaleNorm(Norm):
    """One learned scalar g, initialised to sqrt(dim) so the output has unit RMS at init."""

    def __init__(self, dim, eps=1e-5, channels_first=False, impl="fused"):
        super().__init__(dim, channels_first=channels_first, impl=impl)
        self.eps = eps
        self.g = nn.Parameter(torch.tensor(float(dim) ** 0.5))

    def normalize(self, x):
        return F.scalenorm(x, self.g, self.eps)

    def fused(self, x):
        return fused_scalenorm.scalenorm(x, self.g, self.eps)

    def on_cuda(self, x):
        return cuda.scalenorm(self, x)


class DyT(Norm):
    def __init__(self, dim, alpha_init=0.5, affine=True, channels_first=False, impl="fused"):
        super().__init__(dim, gain=affine, bias=affine, channels_first=channels_first, impl=impl)
        self.alpha = nn.Parameter(torch.full((1,), float(alpha_init)))

    def normalize(self, x):
        return F.dyt(x, self.alpha)

    def squash_input(self, x):  # tanh's argument: the probe's saturation share
        return self.alpha * x

    def fused(self, x):
        return fused_elementwise.dyt(x, self.alpha, self.weight, self.bias)

    def on_cuda(self, x):
        return cuda.dyt(self, x)


class Derf(Norm):
    def __init__(
        self, dim, alpha_init=0.5, shift_init=0.0, affine=True, channels_first=False, impl="fused"
    ):
        super().__init__(dim, gain=affine, bias=affine, channels_first=channels_first, impl=impl)
        self.alpha = nn.Parameter(torch.full((1,), float(alpha_init)))
        self.shift = nn.Parameter(torch.full((1,), float(shift_init)))

    def normalize(self, x):
        return F.derf(x, self.alpha, self.shift)

    def squash_input(self, x):  # erf's argument: the probe's saturation share
        return self.alpha * x + self.shift

    def fused(self, x):
        return fused_elementwise.derf(x, self.alpha, self.shift, self.weight, self.bias)

    def on_cuda(self, x):
        return cuda.derf(self, x)


class BatchNorm(Norm):
    """BatchNorm over every position of the batch (all dims but the feature dim).

    Statistics include padding positions in sequence models: use it for vision, or accept that.
    """

    def __init__(self, dim, eps=1e-5, momentum=0.1, channels_first=False, impl="fused"):
        # nn.BatchNorm1d is torch's fused kernel already: both impls run it
        super().__init__(dim, channels_first=channels_first, impl=impl)
        self.bn = nn.BatchNorm1d(dim, eps=eps, momentum=momentum)

    def normalize(self, x):
        return self.bn(x.reshape(-1, self.dim)).reshape(x.shape)
