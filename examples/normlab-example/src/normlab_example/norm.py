"""LpNorm: y = g * (x - mean) / (mean |x - mean|^p + eps)^(1/p) + b over the features.

p = 2 is LayerNorm; p = 1 is the L1 normalization of Hoffer et al. (2018), "Norm matters", which
trains like it at a lower cost in low precision. The math is a few tensor ops, so normlab's
reference path (``Norm.reference``: ``normalize`` then the affine) is all it needs; a faster path
would override ``Norm.fused`` (CPU) or ``Norm.on_cuda`` (CUDA).
"""

from __future__ import annotations

import torch

from normlab.norms import Norm, register_norm


@register_norm("lpnorm", p=">0", eps=">0")
class LpNorm(Norm):
    def __init__(self, dim, p=1.0, eps=1e-5, affine=True, channels_first=False, impl="fused"):
        super().__init__(dim, gain=affine, bias=affine, channels_first=channels_first, impl=impl)
        self.p, self.eps = float(p), eps

    def normalize(self, x: torch.Tensor) -> torch.Tensor:
        centred = x - x.mean(-1, keepdim=True)
        scale = (centred.abs().pow(self.p).mean(-1, keepdim=True) + self.eps).pow(1.0 / self.p)
        return centred / scale

    def extra_repr(self) -> str:
        return super().extra_repr() + f", p={self.p}, eps={self.eps}"
