"""Fast paths of the element-wise norms DyT and Derf: autograd Functions with analytic backward.

float32/64 CPU calls go to the C++ kernels of ``native.py`` first; these tensor-op paths serve
CUDA, half precision, and machines where those kernels can't be built.

Built like those of ``fused.py`` (whose docstring says why, and why without torch.compile): each
allocates its output in forward and its input gradient in backward, one temporary more, works in
place otherwise, and saves only what backward needs. No LayerNorm kernel computes them, so every
op is one more pass over memory (DyT about seven, Derf an erf and an exp), which on CPU is what
separates them from LayerNorm (results/bench/norms.md).

Results equal ``functional.py`` up to float rounding (tests/test_fused.py checks float64 and
float32). The Functions are once-differentiable; use impl="reference" for double backward.
"""

from __future__ import annotations

import math

import torch
from torch.autograd.function import once_differentiable

from . import native


def _col_sum(t: torch.Tensor) -> torch.Tensor:
    """Sum over every dim but the last, as a matrix-vector product (2x faster than sum(0) on CPU)."""
    t = t.reshape(-1, t.shape[-1])
    return torch.mv(t.t(), t.new_ones(t.shape[0]))


class _DyT(torch.autograd.Function):
    """z = w tanh(alpha x) + b, through s = sigmoid(2 alpha x): tanh = 2s - 1, tanh' = 4s(1 - s).

    On CPU torch's sigmoid is ~10x faster than its tanh. The identity is exact in real
    arithmetic; in floats it costs an absolute error of a few ulp of 1 (relative error grows
    for |alpha x| << 1, where the absolute error stays ~1e-7 in float32). Used for float32/64
    on CPU only (see ``dyt``).
    """

    @staticmethod
    def forward(ctx, x, alpha, w, b):
        x = x.contiguous()
        s = torch.mul(x, 2 * alpha).sigmoid_()
        if w is None:  # z = 2s - 1 in place; backward needs only z: tanh' = (1 - z)(1 + z)
            z = s.mul_(2).sub_(1)
        else:  # z = 2w s + (b - w), s kept for backward
            z = torch.addcmul(-w if b is None else b - w, s, 2 * w)
        ctx.has_b = b is not None
        ctx.save_for_backward(x, alpha, w, z if w is None else s)
        return z

    @staticmethod
    @once_differentiable
    def backward(ctx, g):
        x, alpha, w, s = ctx.saved_tensors
        needs = ctx.needs_input_grad
        g = g.contiguous()
        db = _col_sum(g) if ctx.has_b and needs[3] else None
        if w is None:  # s holds z = tanh: h = (1 - z^2) g
            h = torch.addcmul(
                torch.ones((), dtype=s.dtype, device=s.device), s, s, value=-1.0
            ).mul_(g)
            dw = None
        else:
            h = torch.mul(g, s)  # the one temporary: g s for dL/dw = sum(g (2s - 1)), then h
            dw = 2 * _col_sum(h) - (db if db is not None else _col_sum(g)) if needs[2] else None
            torch.addcmul(h, h, s, value=-1.0, out=h)  # g s (1 - s)
            h.mul_(4 * w)
        dalpha = torch.dot(h.reshape(-1), x.reshape(-1)).reshape(alpha.shape) if needs[1] else None
        return (h.mul_(alpha) if needs[0] else None), dalpha, dw, db


def dyt(x, alpha, w=None, b=None):
    # the sigmoid identity has an absolute error of a few ulp of 1: fine in float32/64, too
    # coarse near 0 in 8-bit-mantissa bfloat16; and off the CPU torch.tanh is fast
    if x.device.type != "cpu" or x.dtype not in (torch.float32, torch.float64):
        y = torch.tanh(alpha * x)
        return y if w is None else torch.addcmul(b, y, w) if b is not None else y * w
    if native.usable(x, alpha, w, b):
        return native.pointwise(x, native.TANH, alpha, None, w, b)
    return _DyT.apply(x, alpha, w, b)


class _Derf(torch.autograd.Function):
    """z = w erf(alpha x + s) + b; saves x and erf(.), recomputes alpha x + s in backward."""

    @staticmethod
    def forward(ctx, x, alpha, shift, w, b):
        x = x.contiguous()
        t = torch.mul(x, alpha).add_(shift).erf_()  # (addcmul with (1,) operands is slower)
        z = t if w is None else torch.addcmul(b, t, w) if b is not None else t * w
        ctx.has_wb = (w is not None, b is not None)
        ctx.save_for_backward(x, alpha, shift, w, t)
        return z

    @staticmethod
    @once_differentiable
    def backward(ctx, g):
        x, alpha, shift, w, t = ctx.saved_tensors
        has_w, has_b = ctx.has_wb
        needs = ctx.needs_input_grad
        g = g.contiguous()
        db = _col_sum(g) if has_b and needs[4] else None
        h = torch.mul(g, t)  # the one temporary: g erf(u) for dL/dw, then dL/du
        dw = _col_sum(h) if has_w and needs[3] else None
        torch.mul(x, alpha, out=h).add_(shift).square_().neg_().exp_().mul_(g)  # exp(-u^2) g
        scale = 2 / math.sqrt(math.pi)  # erf'(u) = 2/sqrt(pi) exp(-u^2)
        h.mul_(w * scale if has_w else scale)
        dalpha = torch.dot(h.reshape(-1), x.reshape(-1)).reshape(alpha.shape) if needs[1] else None
        dshift = h.sum().reshape(shift.shape) if needs[2] else None
        return (h.mul_(alpha) if needs[0] else None), dalpha, dshift, dw, db


def derf(x, alpha, shift, w=None, b=None):
    if native.usable(x, alpha, shift, w, b):
        return native.pointwise(x, native.ERF, alpha, shift, w, b)
    return _Derf.apply(x, alpha, shift, w, b)
