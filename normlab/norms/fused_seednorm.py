"""The fast path of SeeDNorm (one head): an autograd Function with analytic backward.

z = (s alpha + gamma) * x r, with r = rsqrt(mean(x^2) + eps) and s = tanh(<x, beta>) per row.
Built like ``fused_bounded.py``: it saves x and two numbers per row, where the plain autograd
math saves the normalized x, the gain and their products; the per-row dot products and the sums
over rows are matrix-vector products. float32/64 on the CPU; elsewhere, and with several heads,
the layer runs its reference math. Once-differentiable (impl="reference" for double backward).
"""

from __future__ import annotations

import torch
from torch.autograd.function import once_differentiable

from .fused_bounded import inv_rms
from .fused_elementwise import _col_sum


def _rows(t: torch.Tensor) -> torch.Tensor:
    return t.reshape(-1, t.shape[-1])


class _SeeDNorm(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, alpha, beta, gamma, eps):
        x = x.contiguous()
        r = inv_rms(x, eps)
        s = torch.matmul(x, beta).unsqueeze_(-1).tanh_()
        z = torch.addcmul(gamma, s, alpha).mul_(x).mul_(r)
        ctx.save_for_backward(x, alpha, beta, gamma, r, s)
        return z

    @staticmethod
    @once_differentiable
    def backward(ctx, g):
        x, alpha, beta, gamma, r, s = ctx.saved_tensors
        needs = ctx.needs_input_grad
        g = g.contiguous()
        gn = torch.mul(x, r).mul_(g)  # g * x r
        s_rows = s.reshape(-1)
        dgamma = _col_sum(gn) if needs[3] else None
        dalpha = torch.mv(_rows(gn).t(), s_rows) if needs[1] else None
        # d/d<x, beta> per row: (g * x r) . alpha times tanh'
        dseed = torch.matmul(gn, alpha).unsqueeze_(-1).mul_(1 - s * s)
        dbeta = torch.mv(_rows(x).t(), dseed.reshape(-1)) if needs[2] else None
        dx = None
        if needs[0]:
            dn = torch.addcmul(gamma, s, alpha, out=gn).mul_(g)  # dL/d(x r)
            coef = torch.linalg.vecdot(dn, x).unsqueeze_(-1).mul_(r.pow(3)).div_(x.shape[-1])
            dx = dn.mul_(r).addcmul_(x, coef, value=-1.0).addcmul_(dseed, beta)
        return dx, dalpha, dbeta, dgamma, None


def seednorm(x, alpha, beta, gamma, eps: float):
    return _SeeDNorm.apply(x, alpha, beta, gamma, eps)
