"""CUDA paths of the norm variants (``impl="fused"`` on a CUDA tensor).

On an H200 the tensor-op autograd Functions of ``fused.py`` ran 1.4-5x torch.nn.LayerNorm's
fwd+bwd (results/bench/gpu.md): each op is a pass over memory. Here a variant either calls torch's own kernel
(LayerNorm and LN-simple: ``F.layer_norm``; RMSNorm with paper numerics: ``F.rms_norm``) or
runs the reference math of ``functional.py`` through ``torch.compile``, which fuses it into one
kernel per direction and differentiates it exactly (detached statistics included) - the only way
to be both fast and, by construction, the reference. Statistics are fp32 whatever x's dtype.

Only on CUDA by default (``NORMLAB_CUDA_NORMS=0`` turns it off); on CPU the C++ kernels of
``native.py`` are faster than compiled code and start without a compile. ``forced()`` runs these
paths on any device, which is how tests check them without a GPU.
"""

from __future__ import annotations

import contextlib
import os

import torch
import torch.nn.functional as TF

from . import functional as F

_state = {"forced": 0}
_compiled: dict = {}


@contextlib.contextmanager
def forced():
    _state["forced"] += 1
    try:
        yield
    finally:
        _state["forced"] -= 1


def active(x: torch.Tensor) -> bool:
    if _state["forced"]:
        return True
    return x.is_cuda and os.environ.get("NORMLAB_CUDA_NORMS", "1") != "0"


def _compile(fn):
    if fn not in _compiled:
        # dynamic: token counts change every batch; one graph per variant, not per shape
        _compiled[fn] = torch.compile(fn, dynamic=True)
    return _compiled[fn]


def _affine(y, w, b):
    if w is not None:
        y = y * w
    if b is not None:
        y = y + b
    return y


def _ln(x, w, b, eps: float, numerics: str, detach_mean: bool, detach_var: bool):
    y = F.ln_simple(x.float(), eps, detach_mean, detach_var, numerics)
    return _affine(y, w, b).to(x.dtype)


def _adanorm(x, C: float, k: float, eps: float, numerics: str):
    return F.adanorm(x.float(), C, k, eps, numerics).to(x.dtype)


def _rms(x, w, eps: float, numerics: str):
    return _affine(F.rmsnorm(x.float(), eps, numerics), w, None).to(x.dtype)


def _scale(x, g, eps: float):
    return F.scalenorm(x.float(), g, eps).to(x.dtype)


def _dyt(x, alpha, w, b):
    return _affine(F.dyt(x.float(), alpha), w, b).to(x.dtype)


def _derf(x, alpha, shift, w, b):
    return _affine(F.derf(x.float(), alpha, shift), w, b).to(x.dtype)


# The CUDA path of each norm module, on x with the normalized dim last. A layer class names its
# own (Norm.on_cuda), so adding a norm adds no branch here.
def layernorm(m, x: torch.Tensor) -> torch.Tensor:
    if m.numerics == "paper" and not (m.detach_mean or m.detach_var):
        return TF.layer_norm(
            x, (x.shape[-1],), m.weight, m.bias, m.eps
        )  # statistics in fp32 for half x
    return _compile(_ln)(x, m.weight, m.bias, m.eps, m.numerics, m.detach_mean, m.detach_var)


def adanorm(m, x: torch.Tensor) -> torch.Tensor:
    return _compile(_adanorm)(x, m.C, m.k, m.eps, m.numerics)


def rmsnorm(m, x: torch.Tensor) -> torch.Tensor:
    if m.numerics == "paper" and x.dtype == torch.float32:  # half x: fp32 statistics below
        return TF.rms_norm(x, (x.shape[-1],), m.gain, m.eps)
    return _compile(_rms)(x, m.gain, m.eps, m.numerics)


def scalenorm(m, x: torch.Tensor) -> torch.Tensor:
    return _compile(_scale)(x, m.g, m.eps)


def dyt(m, x: torch.Tensor) -> torch.Tensor:
    return _compile(_dyt)(x, m.alpha, m.weight, m.bias)


def derf(m, x: torch.Tensor) -> torch.Tensor:
    return _compile(_derf)(x, m.alpha, m.shift, m.weight, m.bias)


def forward(m, x: torch.Tensor):
    """The CUDA path of norm module ``m`` on ``x`` (last dim normalized), or None if it has none."""
    return m.on_cuda(x)
