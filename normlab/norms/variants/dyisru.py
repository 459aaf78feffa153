"""DyISRU (Stollenwerk, EACL 2026): gamma * x / sqrt(beta + x^2 + eps) + b, beta a learned scalar.

The element-wise counterpart of RMSNorm: RMSNorm's x_i / sqrt(mean_j x_j^2) is
sqrt(C) x_i / sqrt(x_i^2 + sum_{j != i} x_j^2); DyISRU replaces the other channels' sum by a
learned beta, so each element is squashed on its own (an inverse square root unit), bounded by
+-1 before the gain.

Matched against the paper's own code (abcde17/dynamic-activation-functions, nanoGPT/dyaf.py at
deca29dbd5cd, classes ``DyISRU`` and ``DyISRUsp``): beta one scalar per layer, eps = 1e-5 inside
the square root, a per-channel gain (init 1) and bias (init 0) after it, and no sqrt(C) factor (the
gain absorbs it; ``sqrt_dim=true`` puts the paper's formula's sqrt(C) back). ``softplus=true`` is
``DyISRUsp``: softplus(beta) in the square root, which keeps it positive; the plain form leaves
beta free, so a beta driven below -x^2 makes the run diverge, recorded as diverged.

beta's start: the code's class default is 100 and its training script's is 1; here it is
4 = 1 / alpha0^2 with DyT's alpha0 = 0.5, the paper's map between the two (its appendix on initial
values), so that DyISRU and normlab's DyT start with the same slope x / 2 at 0.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from .. import fused_bounded
from ..layers import Norm
from ..registry import register_norm


@register_norm("dyisru", beta_init=">0", eps=">=0", softplus=(False, True), sqrt_dim=(False, True))
class DyISRU(Norm):
    def __init__(
        self,
        dim,
        beta_init=4.0,
        eps=1e-5,
        softplus=False,
        sqrt_dim=False,
        affine=True,
        channels_first=False,
        impl="fused",
    ):
        super().__init__(dim, gain=affine, bias=affine, channels_first=channels_first, impl=impl)
        self.eps, self.softplus, self.sqrt_dim = float(eps), bool(softplus), bool(sqrt_dim)
        # the softplus form stores softplus^-1(beta_init), so both forms start at beta_init
        start = float(beta_init)
        if self.softplus:
            start = start + torch.log(-torch.expm1(torch.tensor(-start))).item()
        self.beta = nn.Parameter(torch.full((1,), start))

    @property
    def effective_beta(self) -> torch.Tensor:
        """The beta inside the square root (softplus of the parameter in the softplus form)."""
        return F.softplus(self.beta) if self.softplus else self.beta

    def normalize(self, x: torch.Tensor) -> torch.Tensor:
        y = x / torch.sqrt(self.effective_beta + x * x + self.eps)
        return y * self.dim**0.5 if self.sqrt_dim else y

    def fused(self, x: torch.Tensor) -> torch.Tensor:
        if not fused_bounded.usable(x):
            return self.reference(x)
        scale = self.dim**0.5 if self.sqrt_dim else 1.0
        return fused_bounded.dyisru(x, self.effective_beta, self.eps, scale, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (
            super().extra_repr() + f", beta={self.effective_beta.item():.4g}, eps={self.eps:g}, "
            f"softplus={self.softplus}, sqrt_dim={self.sqrt_dim}"
        )
