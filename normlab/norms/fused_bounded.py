"""Fast paths of the bounded norms BHyT and DyISRU: autograd Functions with analytic backward.

Built like those of ``fused_elementwise.py``: each allocates its output in forward and its input
gradient in backward, works in place otherwise and saves only what backward needs (x, a per-row
scale, and one tensor of x's size), where the plain autograd math saves every intermediate. They
serve float32/64 on the CPU; elsewhere (CUDA, half precision) the layers run their reference
math. Results equal the reference up to float rounding (tests/test_fused.py, float64 and
float32); the Functions are once-differentiable (impl="reference" for double backward).
"""

from __future__ import annotations

import torch
from torch.autograd.function import once_differentiable

from .fused_elementwise import _col_sum


def usable(x: torch.Tensor) -> bool:
    return x.device.type == "cpu" and x.dtype in (torch.float32, torch.float64)


def inv_rms(x: torch.Tensor, eps: float) -> torch.Tensor:
    """rsqrt(mean(x^2) + eps) per row, (..., 1), through one norm pass and no temporary of x's size."""
    n = torch.linalg.vector_norm(x, dim=-1, keepdim=True)
    return n.square_().div_(x.shape[-1]).add_(eps).rsqrt_()


class _BHyT(torch.autograd.Function):
    """z = w tanh(c x), c = k rsqrt(mean(x^2) + eps) per row, k = lambda / kappa; tanh through
    s = sigmoid(2 c x) as DyT's fast path (torch's sigmoid is ~10x faster than its tanh on CPU)."""

    @staticmethod
    def forward(ctx, x, lam, inv_kappa, eps, w):
        x = x.contiguous()
        r = inv_rms(x, eps)
        k = lam * inv_kappa
        s = torch.mul(x, r * (2 * k)).sigmoid_()
        z = s.mul_(2).sub_(1) if w is None else torch.addcmul(-w, s, 2 * w)
        ctx.inv_kappa, ctx.has_w = inv_kappa, w is not None
        ctx.save_for_backward(x, lam, w, r, z if w is None else s)
        return z

    @staticmethod
    @once_differentiable
    def backward(ctx, g):
        x, lam, w, r, s = ctx.saved_tensors
        needs = ctx.needs_input_grad
        g = g.contiguous()
        if not ctx.has_w:  # s holds z = tanh(u): dL/du = (1 - z^2) g
            h = torch.addcmul(torch.ones((), dtype=s.dtype), s, s, value=-1.0).mul_(g)
            dw = None
        else:  # dL/dw = sum(g (2s - 1)); dL/du = 4 w g s (1 - s)
            h = torch.mul(g, s)
            dw = 2 * _col_sum(h) - _col_sum(g) if needs[4] else None
            torch.addcmul(h, h, s, value=-1.0, out=h)
            h.mul_(4 * w)
        k = lam * ctx.inv_kappa
        p = torch.linalg.vecdot(h, x).unsqueeze(-1)  # per row: sum_j dL/du_j x_j
        dlam = (ctx.inv_kappa * (r * p).sum()).reshape(lam.shape) if needs[1] else None
        dx = None
        if needs[0]:  # u = c x, dc/dx_i = -k r^3 x_i / d
            coef = p.mul_(r.pow(3)).mul_(k / x.shape[-1])
            dx = h.mul_(r * k).addcmul_(x, coef, value=-1.0)
        return dx, dlam, None, None, dw


def bhyt(x, lam, inv_kappa: float, eps: float, w=None):
    return _BHyT.apply(x, lam, inv_kappa, eps, w)


class _DyISRU(torch.autograd.Function):
    """z = w q x t + b, t = rsqrt(beta + x^2 + eps), q = sqrt(d) or 1; dt-free backward:
    d(x t)/dx = t^3 (beta + eps), d(x t)/dbeta = -x t^3 / 2."""

    @staticmethod
    def forward(ctx, x, beta, eps, scale, w, b):
        x = x.contiguous()
        t = torch.mul(x, x).add_(beta + eps).rsqrt_()
        y = torch.mul(x, t)
        if scale != 1.0:
            y.mul_(scale)
        z = y if w is None else (torch.addcmul(b, y, w) if b is not None else y.mul_(w))
        ctx.scale, ctx.eps, ctx.has_wb = scale, eps, (w is not None, b is not None)
        ctx.save_for_backward(x, beta, w, t)
        return z

    @staticmethod
    @once_differentiable
    def backward(ctx, g):
        x, beta, w, t = ctx.saved_tensors
        has_w, has_b = ctx.has_wb
        needs = ctx.needs_input_grad
        g = g.contiguous()
        db = _col_sum(g) if has_b and needs[5] else None
        h = torch.mul(x, t).mul_(g)  # g x t, for dL/dw, then dL/d(x t)
        dw = ctx.scale * _col_sum(h) if has_w and needs[4] else None
        torch.pow(t, 3, out=h).mul_(g)
        h.mul_(w * ctx.scale if has_w else ctx.scale)  # dL/d(x t) t^3
        dbeta = None
        if needs[1]:
            dbeta = (-0.5 * torch.dot(h.reshape(-1), x.reshape(-1))).reshape(beta.shape)
        dx = h.mul_(beta + ctx.eps) if needs[0] else None
        return dx, dbeta, None, None, dw, db


def dyisru(x, beta, eps: float, scale: float, w=None, b=None):
    return _DyISRU.apply(x, beta, eps, scale, w, b)
