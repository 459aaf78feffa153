"""ScaleNorm's fast path (z = g x / max(||x||, eps)): the m = 0 case of the LayerNorm-kernel
identity of ``fused.py``, whose docstring derives it; results equal ``functional.py`` up to float
rounding (tests/test_fused.py)."""

from __future__ import annotations

import math

import torch
from torch.autograd.function import once_differentiable

from . import native
from .fused import _ln_bwd, _row_mean, _stat_dtype


class _ScaleNorm(torch.autograd.Function):
    """z = g x / max(||x||, eps): the m = 0 identity with r = g/||x||, a = sqrt(n)/||x||, c = g/sqrt(n)."""

    @staticmethod
    def forward(ctx, x, g, eps):
        x = x.contiguous()
        norm = torch.linalg.vector_norm(x, dim=-1, keepdim=True, dtype=_stat_dtype(x))
        ctx.eps = eps
        ctx.save_for_backward(x, g, norm)
        return torch.mul(x, (g / norm.clamp_min(eps)).to(x.dtype))

    @staticmethod
    @once_differentiable
    def backward(ctx, grad):
        x, g, raw = ctx.saved_tensors
        n = x.shape[-1]
        norm = raw.clamp_min(ctx.eps)
        # c = g/sqrt(n) as the kernel's gain; a gain also makes it return sum(grad xh) for dL/dg
        gain = (g.detach() / math.sqrt(n)).to(x.dtype).expand(n).contiguous()
        dx, dg, _ = _ln_bwd(
            grad,
            x,
            torch.zeros_like(norm),
            math.sqrt(n) / norm,
            gain,
            None,
            [ctx.needs_input_grad[0], ctx.needs_input_grad[1], False],
        )
        if dx is not None:
            r = (g / norm).to(x.dtype)
            dx.add_(_row_mean(grad, None) * r)
            clamped = raw < ctx.eps  # where the clamp is active the norm is a constant: r grad
            if bool(clamped.any()):
                dx = torch.where(clamped, grad * r, dx)
        if dg is not None:  # sum(grad x / ||x||) = sum_j dgamma_j / sqrt(n)
            dg = (dg.sum() / math.sqrt(n)).reshape(g.shape)
        return dx, dg, None


def scalenorm(x, g, eps=1e-5):
    if native.usable(x, g):
        return native.row_norm(x, scale=g, center=False, sigma="clamped", eps=eps)
    return _ScaleNorm.apply(x, g, eps)
