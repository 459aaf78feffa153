"""Fast paths of the norm variants that torch's LayerNorm kernels serve: LayerNorm, LN-simple,
DetachNorm, detach-mean/var, AdaNorm, RMSNorm (and ScaleNorm, in ``fused_scalenorm.py`` on the
helpers here), as autograd Functions with analytic backward. The element-wise DyT and Derf are in
``fused_elementwise.py``.

Each entry point (``layer_norm``, ``adanorm``, ...) first hands float32/64 CPU calls to the C++
kernels of ``native.py`` (one pass per direction, the fastest on CPU); the tensor-op paths below
serve CUDA, half precision, and machines where those kernels can't be built.

Written as chains of tensor ops (``functional.py``), a norm allocates a full-size tensor per op
and autograd keeps most of them for backward. Here each variant allocates its output in forward
and its input gradient in backward (AdaNorm one temporary more), works in place otherwise, and
saves only what backward needs. What torch's LayerNorm kernels can compute runs at their speed
(LayerNorm, LN-simple, DetachNorm, detach-mean/var); every further op is one more pass over
memory (RMSNorm and ScaleNorm two, AdaNorm four), which on CPU is what separates them from
LayerNorm (results/bench/norms.md). No torch.compile, here or in ``fused_elementwise.py``: on the
2-core machine it took 47 s per process cold and 11 s with a warm cache, against runs of minutes.

The heavy lifting is torch's own fused LayerNorm backward kernel, reused through one identity.
With xh = (x - m) a, that kernel returns ``K(g; m, a) = a (g - mean(g) - xh mean(g xh))``.
Every norm here whose sigma depends on x has the gradient ``r (g - mean(g)) - (x - m) r^2 q s``
with r = 1/sigma, d sigma/d x = q (x - m) and s = sum(g (x - m)), so it equals
``c K(g; m, a)`` with ``a = sqrt(n r q)`` and ``c = r / a`` (n features). Detaching mu adds back
``r mean(g)``; detaching sigma leaves ``r (g - mean(g))``; detaching both leaves ``r g``.
RMSNorm and ScaleNorm are the m = 0 case plus ``r mean(g)``. Paper numerics (sigma =
sqrt(var + eps), q = 1/(n sigma)) give a = r, c = 1: exactly torch's LayerNorm backward.

Results equal ``functional.py`` up to float rounding (tests/test_fused.py checks float64 and
float32). The Functions are once-differentiable; use impl="reference" for double backward.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch.autograd.function import once_differentiable

from . import native

_LN_BWD_OP = torch.ops.aten.native_layer_norm_backward
_RMS_FWD = getattr(torch.ops.aten, "_fused_rms_norm", None)  # a fused kernel on CUDA (torch >= 2.8)


def _stat_dtype(x: torch.Tensor) -> torch.dtype:
    # torch's norm kernels keep mean/rstd of half inputs in float32
    return torch.float32 if x.dtype in (torch.float16, torch.bfloat16) else x.dtype


_CONST: dict = {}


def _const(x: torch.Tensor, value: float) -> torch.Tensor:
    """A cached constant vector over x's features (a gain or bias for torch's kernels)."""
    key = (x.shape[-1], x.dtype, x.device, value)
    if key not in _CONST:
        _CONST[key] = torch.full((x.shape[-1],), value, dtype=x.dtype, device=x.device)
    return _CONST[key]


def _unit(x: torch.Tensor) -> torch.Tensor:
    """A gain of ones: torch's CPU LayerNorm forward kernel takes a path ~2x faster with a gain
    than without one, and multiplying by 1 is exact."""
    return _const(x, 1.0)


def _ln_bwd(g, x, m, a, w, b, mask):
    """torch's LayerNorm backward kernel; it wants mean/rstd in the dtype its forward returns:
    float32 for half inputs on CUDA or with a float32 gain, the input's dtype otherwise."""
    half = x.dtype in (torch.float16, torch.bfloat16)
    mixed = w is not None and w.dtype == torch.float32
    sd = torch.float32 if half and (x.device.type != "cpu" or mixed) else x.dtype
    return _LN_BWD_OP(g, x, (x.shape[-1],), m.to(sd), a.to(sd), w, b, mask)


def _row_mean(g: torch.Tensor, w) -> torch.Tensor:
    """mean over features of g * w as a (..., 1) column; a matrix-vector product when w is set."""
    s = g @ w.to(g.dtype) if w is not None else g.sum(-1)
    return s.unsqueeze(-1) / g.shape[-1]


def _kernel_grad(g, x, m, a, c, w=None, need_w=False, b=None, need_b=False, plus=None):
    """c K(g w; m, a) + plus (see the module docstring), and the kernel's sum(g xh) / sum(g) over
    rows if need_w / need_b (the affine gradients when a = r). A scalar factor of the result
    goes in as a constant w: the kernel scales g by its gain for free."""
    dx, dw, db = _ln_bwd(g, x, m, a, w, b, [True, need_w, need_b])
    # two in-place passes: a fused addcmul with an (N, 1) operand is slower on CPU
    if c is not None:
        dx.mul_(c.to(dx.dtype))
    if plus is not None:
        dx.add_(plus.to(dx.dtype))
    return dx, dw, db


def _affine_grads(g, x, m, r, w, b, needs):
    """dL/dw = sum(g (x - m) r), dL/db = sum(g) from torch's kernel, without dL/dx."""
    need_w, need_b = needs[1] and w is not None, needs[2] and b is not None
    if not (need_w or need_b):
        return None, None
    _, dw, db = _ln_bwd(g, x, m, r, w, b, [False, need_w, need_b])
    return dw, db


# ---------------------------------------------------------------- LayerNorm family and AdaNorm


def _ln_forward(x, eps, numerics, w=None, b=None):
    """y = (x - mu)/sigma (* w + b) for a contiguous x, with mean, r = 1/sigma and the (a, c)
    of the kernel identity (c None when a = r)."""
    n = x.shape[-1]
    if numerics == "paper":
        y, mean, rstd = torch.native_layer_norm(x, (n,), _unit(x) if w is None else w, b, eps)
        return y, mean, rstd, rstd, None
    # official: sigma = unbiased std + eps. The kernel with eps' = tiny yields the mean and
    # 1/sqrt(var_biased) in one pass (x.std() costs ~30 passes on CPU); a per-row factor converts.
    tiny = torch.finfo(_stat_dtype(x)).tiny
    y, mean, rb = torch.native_layer_norm(x, (n,), _unit(x), None, tiny)
    var = rb.pow(-2).sub_(tiny)
    std = var.masked_fill_(var <= 4 * tiny, 0.0).mul_(n / (n - 1)).sqrt_()  # 0, not ~1e-160
    rstd = 1.0 / (std + eps)
    y.mul_((rstd / rb).to(y.dtype))
    if w is not None:
        y.mul_(w)
    if b is not None:
        y.add_(b)
    # q = 1/((n-1) std). On a constant row torch's std backward is 0 (it masks std == 0): only
    # r (g - mean g) remains, which is a = r there (x - m = 0 kills the kernel's last term)
    a = torch.where(std > 0, torch.sqrt(rstd * (n / (n - 1)) / std), rstd)
    return y, mean, rstd, a, rstd / a


class _LayerNorm(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, w, b, eps, numerics, detach_mean, detach_var):
        x = x.contiguous()
        y, mean, rstd, a, c = _ln_forward(x, eps, numerics, w, b)
        ctx.flags = (detach_mean, detach_var)
        if detach_var and w is None:
            ctx.save_for_backward(rstd)  # r (g - mean(g)) or r g: nothing else is needed
        else:
            ctx.save_for_backward(rstd, x, mean, a, c, w, b)
        return y

    @staticmethod
    @once_differentiable
    def backward(ctx, g):
        detach_mean, detach_var = ctx.flags
        needs = ctx.needs_input_grad
        if len(ctx.saved_tensors) == 1:
            rstd = ctx.saved_tensors[0].to(g.dtype)
            if detach_mean:
                return g * rstd, None, None, None, None, None, None
            dx = torch.sub(g, _row_mean(g, None)).mul_(rstd)  # r (g - mean(g))
            return dx, None, None, None, None, None, None
        rstd, x, mean, a, c, w, b = ctx.saved_tensors
        dx = dw = db = None
        if needs[0] and not detach_var:  # the kernel identity, plus r mean(g w) if mu is detached
            exact = c is None  # paper numerics: the kernel's affine gradients are exact
            plus = _row_mean(g, w) * rstd if detach_mean else None
            dx, dw, db = _kernel_grad(
                g,
                x,
                mean,
                a,
                c,
                w,
                exact and needs[1] and w is not None,
                b,
                exact and needs[2] and b is not None,
                plus,
            )
        elif needs[0]:  # sigma detached, with an affine: r (g w - mean(g w)) or r g w
            dx = g * w
            if not detach_mean:
                dx.sub_(_row_mean(g, w))
            dx.mul_(rstd.to(dx.dtype))
        if dw is None and db is None:
            dw, db = _affine_grads(g, x, mean, rstd, w, b, needs)
        return dx, dw, db, None, None, None, None


def layer_norm(x, w=None, b=None, eps=1e-5, numerics="paper", detach_mean=False, detach_var=False):
    """LayerNorm / LN-simple / DetachNorm / detach-mean / detach-var, with the affine fused in."""
    if numerics == "paper" and not (detach_mean or detach_var):
        # torch's kernel is this exact math
        return F.layer_norm(x, (x.shape[-1],), _unit(x) if w is None else w, b, eps)
    if native.usable(x, w, b):
        return native.row_norm(
            x, w, b, sigma=numerics, eps=eps, detach_mean=detach_mean, detach_var=detach_var
        )
    return _LayerNorm.apply(x, w, b, eps, numerics, detach_mean, detach_var)


class _AdaNorm(torch.autograd.Function):
    """z = C y (1 - k y); backward: phi = C(1 - k y) scales g, then LN-simple's full Jacobian."""

    @staticmethod
    def forward(ctx, x, C, k, eps, numerics):
        x = x.contiguous()
        gain = _const(x, C) if C != 1.0 else None
        z, mean, rstd, a, c = _ln_forward(x, eps, numerics, gain)  # z = C y
        z.addcmul_(z, z, value=-k / C)  # C y - (k/C) (C y)^2 = C y (1 - k y)
        ctx.C, ctx.k = C, k
        ctx.save_for_backward(x, mean, rstd, a, c)
        return z

    @staticmethod
    @once_differentiable
    def backward(ctx, g):
        x, mean, rstd, a, c = ctx.saved_tensors
        C, k = ctx.C, ctx.k
        # the one temporary: phi g / C = (1 - k y) g, with k y = x r k - m r k. (Recomputing
        # 1 - k y with torch's forward kernel, gain -k and bias 1, is one pass but ~1.6x slower.)
        rk = (rstd * k).to(x.dtype)
        u = torch.mul(x, -rk).add_(1.0 + mean.to(x.dtype) * rk)
        u.mul_(g)
        dx, _, _ = _kernel_grad(u, x, mean, a, c, _const(x, C) if C != 1.0 else None)  # C as gain
        return dx, None, None, None, None


def adanorm(x, C=1.0, k=0.1, eps=1e-5, numerics="paper"):
    if native.usable(x):
        return native.row_norm(x, scale=C, k=k, sigma=numerics, eps=eps)
    return _AdaNorm.apply(x, C, k, eps, numerics)


# ------------------------------------------------------------------------- RMSNorm, ScaleNorm


class _RMSNorm(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, w, eps, numerics):
        x = x.contiguous()
        n = x.shape[-1]
        if numerics == "paper" and _RMS_FWD is not None and x.device.type != "cpu":
            y, rstd = _RMS_FWD(x, (n,), w, eps)  # rsqrt(mean(x^2) + eps), one kernel
            a = c = None
        else:  # on CPU torch's _fused_rms_norm is a chain of ops: a norm and a scale are faster
            norm = torch.linalg.vector_norm(x, dim=-1, keepdim=True, dtype=_stat_dtype(x))
            if numerics == "paper":
                rstd, a, c = torch.rsqrt(norm.square_().div_(n).add_(eps)), None, None
            else:  # sigma = rms + eps, q = 1/(n rms): a = sqrt(r / rms); a zero row has r = 1/eps
                rms = norm.mul_(n**-0.5)
                rstd = 1.0 / (rms + eps)
                a = torch.where(rms > 0, torch.sqrt(rstd / rms), rstd)
                c = rstd / a
            y = torch.mul(x, rstd.to(x.dtype))
            if w is not None:
                y.mul_(w)
        ctx.save_for_backward(x, rstd, a, c, w)
        return y

    @staticmethod
    @once_differentiable
    def backward(ctx, g):
        x, rstd, a, c, w = ctx.saved_tensors
        needs = ctx.needs_input_grad
        zero = torch.zeros_like(rstd)
        dx = dw = None
        if needs[0]:
            exact_w = c is None and needs[1] and w is not None
            dx, dw, _ = _kernel_grad(
                g, x, zero, rstd if a is None else a, c, w, exact_w, plus=_row_mean(g, w) * rstd
            )
        if dw is None and needs[1] and w is not None:
            dw, _ = _affine_grads(g, x, zero, rstd, w, None, needs)
        return dx, dw, None, None


def rmsnorm(x, w=None, eps=1e-5, numerics="paper"):
    if native.usable(x, w):
        return native.row_norm(x, w, center=False, sigma=numerics, eps=eps)
    return _RMSNorm.apply(x, w, eps, numerics)
