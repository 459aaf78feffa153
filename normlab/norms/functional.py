"""The math of every norm variant, as plain tensor operations.

This module is the single reference: modules in ``layers.py`` call these functions, and any
fused or compiled fast path must match them (the tests compare against this file).
All functions normalize over the last dimension.
"""

from __future__ import annotations

import torch

NUMERICS = ("paper", "official")


def ln_simple(
    x: torch.Tensor,
    eps: float = 1e-5,
    detach_mean: bool = False,
    detach_var: bool = False,
    numerics: str = "paper",
) -> torch.Tensor:
    """y = (x - mu) / sigma over the last dim, with mu and/or sigma optionally constant in backward.

    numerics="paper": biased variance, eps inside the square root (torch.nn.LayerNorm's math).
    numerics="official": unbiased std, divide by (std + eps), as lancopku/AdaNorm's layer_norm.py.
    """
    mu = x.mean(-1, keepdim=True)
    if numerics == "paper":
        # d var / d mu is zero (sum of deviations is 0), so var may use the live mu either way.
        var = (x - mu).pow(2).mean(-1, keepdim=True)
        sigma = torch.sqrt(var + eps)
    elif numerics == "official":
        sigma = x.std(-1, keepdim=True, unbiased=True) + eps
    else:
        raise ValueError(f"numerics must be one of {NUMERICS}, got {numerics!r}")
    if detach_mean:
        mu = mu.detach()
    if detach_var:
        sigma = sigma.detach()
    return (x - mu) / sigma


def adanorm(
    x: torch.Tensor, C: float = 1.0, k: float = 0.1, eps: float = 1e-5, numerics: str = "paper"
) -> torch.Tensor:
    """z = C * (1 - k*y) * y, y = LN-simple(x); phi = C(1 - k*y) is a constant in backward.

    mu and sigma are *not* detached: AdaNorm keeps LN-simple's gradient re-centring/re-scaling.
    """
    y = ln_simple(x, eps=eps, numerics=numerics)
    return C * y * (1.0 - k * y).detach()


def rmsnorm(x: torch.Tensor, eps: float = 1e-5, numerics: str = "paper") -> torch.Tensor:
    """x / RMS(x) without gain. "paper": rsqrt(mean(x^2) + eps) (torch.nn.RMSNorm's math);
    "official": x / (||x|| d^-1/2 + eps) as bzhangGo/rmsnorm's rmsnorm_torch.py."""
    if numerics == "paper":
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)
    if numerics == "official":
        rms = x.norm(2, dim=-1, keepdim=True) * x.shape[-1] ** -0.5
        return x / (rms + eps)
    raise ValueError(f"numerics must be one of {NUMERICS}, got {numerics!r}")


def scalenorm(x: torch.Tensor, g: torch.Tensor, eps: float = 1e-5) -> torch.Tensor:
    """g * x / ||x|| (Nguyen & Salazar 2019), g a learned scalar."""
    return g * x / x.norm(2, dim=-1, keepdim=True).clamp_min(eps)


def dyt(x: torch.Tensor, alpha: torch.Tensor) -> torch.Tensor:
    """tanh(alpha * x) (Zhu et al. 2025), before the per-channel affine."""
    return torch.tanh(alpha * x)


def derf(x: torch.Tensor, alpha: torch.Tensor, shift: torch.Tensor) -> torch.Tensor:
    """erf(alpha * x + s) (Chen et al. 2025), before the per-channel affine."""
    return torch.erf(alpha * x + shift)
