"""Gradients of the norm variants, in float64.

- gradcheck for the variants whose backward is the true derivative (and a check that it is
  *not* for the detached ones, so a lost ``.detach()`` is caught);
- detached variants and AdaNorm against analytic gradients written here, with the detached
  quantities held constant;
- Theorem 1 of Xu et al. (2019), docs papers.md section 1.1, with sigma = sqrt(var + eps).
"""

from __future__ import annotations

import pytest
import torch
from torch.func import functional_call

from normlab.norms import build_norm

H = 8
EPS = 1e-5


def xin(*shape, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=gen, dtype=torch.float64) * 2.0 + 0.7


def upstream(*shape, seed=1):
    # a non-zero mean, so that "the mean is re-centred" is a real claim
    return xin(*shape, seed=seed) * 0.5 + 0.3


def input_grad(name, x, g, **options):
    x = x.detach().clone().requires_grad_()
    build_norm(name, x.shape[-1], **options)(x).backward(g)
    return x.grad


# ------------------------------------------------------------------------------- 2. gradcheck

TRUE_GRADIENT = [
    ("none", {}),
    ("layernorm", {}),
    ("layernorm", {"numerics": "official"}),
    ("layernorm_simple", {}),
    ("layernorm_simple", {"numerics": "official"}),
    ("rmsnorm", {}),
    ("rmsnorm", {"numerics": "official"}),
    ("dyt", {}),
    ("derf", {}),
    ("scalenorm", {}),
]


@pytest.mark.parametrize("name,options", TRUE_GRADIENT)
def test_gradcheck(name, options):
    module = build_norm(name, H, **options).double()
    names = [n for n, _ in module.named_parameters()]
    gen = torch.Generator().manual_seed(0)
    params = [
        (p.detach() + 0.3 * torch.randn(p.shape, generator=gen, dtype=p.dtype)).requires_grad_()
        for p in module.parameters()
    ]

    # parameters become inputs too, so their gradients are checked along with the input's
    def f(x, *ps):
        return functional_call(module, dict(zip(names, ps)), (x,))

    x = xin(3, H).requires_grad_()
    assert torch.autograd.gradcheck(f, (x, *params), eps=1e-6, atol=1e-6, rtol=1e-5)


@pytest.mark.parametrize("name", ["detachnorm", "detach_mean", "detach_var", "adanorm"])
def test_detached_variants_fail_gradcheck(name):
    # their backward deliberately is not the derivative of their forward
    x = xin(3, H).requires_grad_()
    ok = torch.autograd.gradcheck(
        build_norm(name, H), (x,), eps=1e-6, atol=1e-6, rtol=1e-5, raise_exception=False
    )
    assert not ok


# --------------------------------------------------------------- 3. analytic detached gradients


def stats(x, numerics):
    """mu, sigma and d sigma / d x_i (with mu live) for both numerics, written out by hand."""
    n = x.shape[-1]
    mu = x.sum(-1, keepdim=True) / n
    d = x - mu
    if numerics == "paper":  # sigma = sqrt(var + eps), var biased
        sigma = torch.sqrt((d**2).sum(-1, keepdim=True) / n + EPS)
        dsigma = d / (n * sigma)
    else:  # sigma = std_unbiased + eps
        std = torch.sqrt((d**2).sum(-1, keepdim=True) / (n - 1))
        sigma = std + EPS
        dsigma = d / ((n - 1) * std)
    return mu, sigma, dsigma


def analytic_grad(x, g, numerics="paper", mean_live=True, sigma_live=True):
    """dl/dx of y = (x - mu)/sigma; a detached mu or sigma simply drops its term.

    dy_j/dx_i = (delta_ij - [mu live]/n)/sigma - [sigma live] * y_j/sigma * dsigma/dx_i
    """
    mu, sigma, dsigma = stats(x, numerics)
    y = (x - mu) / sigma
    dx = g / sigma
    if mean_live:
        dx = dx - g.mean(-1, keepdim=True) / sigma
    if sigma_live:
        dx = dx - (g * y).sum(-1, keepdim=True) / sigma * dsigma
    return dx


VARIANTS = {  # name -> (mu live, sigma live) in backward
    "layernorm_simple": (True, True),
    "detach_mean": (False, True),
    "detach_var": (True, False),
    "detachnorm": (False, False),
}


def assert_exact(a, b):
    # float64 round-off is ~1e-15 here; the dropped terms are O(0.1), so 1e-10 means "absent"
    torch.testing.assert_close(a, b, rtol=0, atol=1e-10)


@pytest.mark.parametrize("numerics", ["paper", "official"])
@pytest.mark.parametrize("name", list(VARIANTS))
def test_ln_family_input_grad(name, numerics):
    x, g = xin(4, 3, H), upstream(4, 3, H)
    got = input_grad(name, x, g, numerics=numerics)
    assert_exact(got, analytic_grad(x, g, numerics, *VARIANTS[name]))
    if name != "layernorm_simple":
        full = input_grad("layernorm_simple", x, g, numerics=numerics)
        assert (got - full).abs().max() > 1e-3  # the detach really changes the gradient


def test_detached_closed_forms():
    # the forms stated in the task, paper numerics, sigma = sqrt(var + eps)
    x, g = xin(5, H), upstream(5, H)
    mu = x.mean(-1, keepdim=True)
    sigma = torch.sqrt(((x - mu) ** 2).mean(-1, keepdim=True) + EPS)
    y = (x - mu) / sigma
    assert_exact(input_grad("detachnorm", x, g), g / sigma)
    assert_exact(input_grad("detach_var", x, g), (g - g.mean(-1, keepdim=True)) / sigma)
    assert_exact(input_grad("detach_mean", x, g), (g - y * (g * y).mean(-1, keepdim=True)) / sigma)


@pytest.mark.parametrize("numerics", ["paper", "official"])
@pytest.mark.parametrize("C,k", [(1.0, 0.1), (2.0, 0.1)])
def test_adanorm_input_grad(C, k, numerics):
    # phi = C(1 - k y) is a constant in backward: the upstream gradient is scaled by phi, then
    # goes through LN-simple's full Jacobian (mu and sigma are not detached in AdaNorm)
    x, g = xin(4, H), upstream(4, H)
    mu, sigma, _ = stats(x, numerics)
    y = (x - mu) / sigma
    got = input_grad("adanorm", x, g, C=C, k=k, numerics=numerics)
    assert_exact(got, analytic_grad(x, g * C * (1 - k * y), numerics))
    # differs from the true derivative of C(1 - k y) y, whose upstream factor is C(1 - 2 k y)
    true = analytic_grad(x, g * C * (1 - 2 * k * y), numerics)
    assert (got - true).abs().max() > 1e-3


# ------------------------------------------------------------------------------ 4. Theorem 1


def theorem_setup():
    x, g = xin(16, H, seed=3), upstream(16, H, seed=4)
    mu = x.mean(-1, keepdim=True)
    sigma = torch.sqrt(((x - mu) ** 2).mean(-1, keepdim=True) + EPS).squeeze(-1)
    g_mean = g.mean(-1)
    d_g = ((g - g.mean(-1, keepdim=True)) ** 2).mean(-1)  # population variance over hidden
    return x, g, sigma, g_mean, d_g


def mean_var(dx):
    m = dx.mean(-1)
    return m, ((dx - m[:, None]) ** 2).mean(-1)


def test_theorem1_ln_simple():
    x, g, sigma, g_mean, d_g = theorem_setup()
    m, v = mean_var(input_grad("layernorm_simple", x, g))
    assert m.abs().max() < 1e-12  # re-centring: zero mean per token
    assert (v <= d_g / sigma**2 * (1 + 1e-12)).all()  # re-scaling: never larger ...
    assert (v < 0.99 * d_g / sigma**2).any()  # ... and actually smaller for some token
    assert (g_mean.abs() > 1e-2).all()  # the claim is not vacuous: upstream means are non-zero


def test_theorem1_detach_var():
    x, g, sigma, _, d_g = theorem_setup()
    m, v = mean_var(input_grad("detach_var", x, g))
    assert m.abs().max() < 1e-12
    torch.testing.assert_close(v, d_g / sigma**2, rtol=1e-10, atol=0)


def test_theorem1_detach_mean():
    x, g, sigma, g_mean, d_g = theorem_setup()
    m, v = mean_var(input_grad("detach_mean", x, g))
    torch.testing.assert_close(m, g_mean / sigma, rtol=1e-10, atol=0)
    assert (v <= d_g / sigma**2 * (1 + 1e-12)).all()


def test_theorem1_detachnorm():
    x, g, sigma, g_mean, d_g = theorem_setup()
    dx = input_grad("detachnorm", x, g)
    assert_exact(dx, g / sigma[:, None])
    m, v = mean_var(dx)
    torch.testing.assert_close(m, g_mean / sigma, rtol=1e-10, atol=0)
    torch.testing.assert_close(v, d_g / sigma**2, rtol=1e-10, atol=0)
