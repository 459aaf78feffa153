"""BHyT (ICML 2026): gamma * tanh(lambda * x / (kappa * RMS(x))), RMS(x) = sqrt(mean(x^2) + eps).

A DyT whose input scale follows each token's RMS: the tanh sees x / RMS(x) (unit RMS), scaled by
lambda / kappa = 2 * 0.1 = 0.2 at the defaults, so at init it is nearly linear and RMSNorm-like,
and it saturates only on elements over about ten times the token's RMS.

Matched against the official code's standalone ``BHyT_Star`` (MLAI-Yonsei/BHyT,
models/hf_src/llama/modeling_llama.py at e170c9bd2daf): no bias, gain gamma initialised to 1,
eps = 1e-6 inside the square root, 1/kappa = 0.1 a constant. Two choices differ from that file:

- lambda is fixed by default (``learn_lam=true`` learns it, a scalar initialised to ``lam``):
  the paper states lambda = 2 fixed. The official file's "fixed" lambda is
  ``nn.Parameter(torch.tensor(lam_init, requires_grad=False))``, which a Parameter makes
  trainable again, and its shipped configs set ``learnable_lam: True``.
- The official class takes the mean of x^2 in float32 whatever the input's dtype; here it is in
  the input's dtype (float32 in training: Norm.forward runs norms in float32 under autocast),
  so float64 runs are float64 throughout.

The official repository's block-level ``BHyT`` estimates the second norm's RMS of a block from the
first's and a Frobenius norm of W_V W_O refreshed every few hundred steps (a training callback);
it is not offered here, since it cannot be matched exactly outside that training loop.
"""

from __future__ import annotations

import torch
from torch import nn

from .. import functional as F
from .. import fused_bounded
from ..layers import Norm
from ..registry import register_norm


@register_norm("bhyt", lam=">0", inv_kappa=">0", eps=">0", learn_lam=(False, True))
class BHyT(Norm):
    def __init__(
        self,
        dim,
        lam=2.0,
        inv_kappa=0.1,
        eps=1e-6,
        learn_lam=False,
        affine=True,
        channels_first=False,
        impl="fused",
    ):
        super().__init__(dim, gain=affine, channels_first=channels_first, impl=impl)
        self.inv_kappa, self.eps = float(inv_kappa), float(eps)
        lam = torch.full((1,), float(lam))
        if learn_lam:
            self.lam = nn.Parameter(lam)
        else:  # a buffer: saved with the model, never trained
            self.register_buffer("lam", lam)

    @property
    def alpha(self) -> torch.Tensor:
        """The scalar the probe reports beside the saturation share: lambda."""
        return self.lam

    def squash_input(self, x: torch.Tensor) -> torch.Tensor:
        """The tanh's argument, lambda / kappa * x / RMS(x)."""
        return (self.lam * self.inv_kappa) * F.rmsnorm(x, self.eps)

    def normalize(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.squash_input(x))

    def fused(self, x: torch.Tensor) -> torch.Tensor:
        if not fused_bounded.usable(x):
            return self.reference(x)
        return fused_bounded.bhyt(x, self.lam, self.inv_kappa, self.eps, self.weight)

    def extra_repr(self) -> str:
        learned = isinstance(self.lam, nn.Parameter)
        return (
            super().extra_repr()
            + f", lam={self.lam.item():g} ({'learned' if learned else 'fixed'}), "
            f"inv_kappa={self.inv_kappa:g}, eps={self.eps:g}"
        )
