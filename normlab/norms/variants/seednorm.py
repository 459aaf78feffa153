"""SeeDNorm (Self-Rescaled Dynamic Normalization, ICLR 2026):
[tanh(<x, beta>) * alpha + gamma] * x / RMS(x), RMS(x) = sqrt(mean(x^2) + eps).

RMSNorm whose gain moves with the input: a scalar per token, tanh of x's projection on a learned
beta (on the raw x, not the normalized one), scales a learned alpha added to the static gain
gamma. alpha, beta, gamma are vectors over the features.

From the paper's formula and settings (no official code was found): gamma starts at 1, beta at 0
(so at init it is exactly RMSNorm with gain gamma), alpha at 1 (the paper's language-model value;
``alpha_init``). Its stabilisation is weight decay on alpha and beta, which normlab's parameter
groups give no other 1-D tensor (``decay_dynamic``, on by default; runs without weight decay are
unaffected); and, for wide inputs, the multi-head form (``heads`` > 1: x and beta split into
heads, one tanh per head over its features), since the variance of <x, beta> grows with the
width. Checked against two third-party implementations that follow the paper's pseudocode
(swiss-ai/Megatron-LM and AllenHaoHuang/Megatron-LM, megatron/core/transformer/torch_norm.py).
"""

from __future__ import annotations

import torch
from torch import nn

from .. import functional as F
from .. import fused_bounded, fused_seednorm
from ..layers import Norm
from ..optim import decayed
from ..registry import register_norm


@register_norm("seednorm", alpha_init=">=0", eps=">0", heads=">0", decay_dynamic=(True, False))
class SeeDNorm(Norm):
    def __init__(
        self,
        dim,
        alpha_init=1.0,
        eps=1e-6,
        heads=1,
        decay_dynamic=True,
        channels_first=False,
        impl="fused",
    ):
        if int(heads) != heads or dim % int(heads):
            raise ValueError(
                f"norm.options.heads={heads} must be a whole number that divides the {dim} features"
            )
        super().__init__(dim, gain=True, channels_first=channels_first, impl=impl)
        self.eps, self.heads = float(eps), int(heads)
        self.alpha = nn.Parameter(torch.full((dim,), float(alpha_init)))
        self.beta = nn.Parameter(torch.zeros(dim))
        if decay_dynamic:
            decayed(self.alpha, self.beta)

    def rescale(self, x: torch.Tensor) -> torch.Tensor:
        """tanh(<x, beta>) per token (per head), broadcast over the features."""
        if self.heads == 1:
            return torch.tanh((x * self.beta).sum(-1, keepdim=True))
        split = (*x.shape[:-1], self.heads, self.dim // self.heads)
        seed = (x.reshape(split) * self.beta.reshape(split[-2:])).sum(-1)
        return torch.tanh(seed).repeat_interleave(self.dim // self.heads, dim=-1)

    def reference(self, x: torch.Tensor) -> torch.Tensor:
        gain = self.rescale(x) * self.alpha + self.weight
        return gain * F.rmsnorm(x, self.eps)

    def fused(self, x: torch.Tensor) -> torch.Tensor:
        if self.heads != 1 or not fused_bounded.usable(x):
            return self.reference(x)
        return fused_seednorm.seednorm(x, self.alpha, self.beta, self.weight, self.eps)

    def extra_repr(self) -> str:
        return super().extra_repr() + f", eps={self.eps:g}, heads={self.heads}"
