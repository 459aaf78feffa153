"""The CUDA paths of ``norms/cuda.py`` (torch's kernels, or the reference math through
torch.compile), run on CPU with ``cuda.forced()``: forward and gradients against the reference
in float64, including the detached-statistics variants whose gradients differ from LayerNorm's."""

import pytest
import torch

from normlab.norms import build_norm, cuda

FAST = ["layernorm", "layernorm_simple", "detachnorm", "adanorm", "rmsnorm"]
SLOW = ["detach_mean", "detach_var", "scalenorm", "dyt", "derf"]


def check(name, options=None, dtype=torch.float32):
    options = options or {}
    torch.manual_seed(0)
    x = torch.randn(2, 37, 48) * 2 + 0.5  # 74 rows: a shape the compiled graph must not assume
    g = torch.randn(2, 37, 48)
    ref = build_norm(name, 48, impl="reference", **options).double()
    with torch.no_grad():
        for p in ref.parameters():  # non-trivial affine and alpha values
            p.add_(torch.randn(p.shape, dtype=p.dtype) * 0.3)
    fast = build_norm(name, 48, **options)
    fast.load_state_dict({k: v.float() for k, v in ref.state_dict().items()})
    xr = x.double().requires_grad_(True)
    ref(xr).backward(g.double())
    xf = x.to(dtype).requires_grad_(True)
    with cuda.forced():
        y = fast(xf)
    y.backward(g.to(dtype))
    tol = dict(atol=2e-5, rtol=1e-4) if dtype == torch.float32 else dict(atol=5e-2, rtol=2e-2)
    torch.testing.assert_close(y.double(), ref(x.double()), **tol)
    torch.testing.assert_close(xf.grad.double(), xr.grad, **tol)
    for (k, p), q in zip(fast.named_parameters(), ref.parameters()):
        torch.testing.assert_close(p.grad.double(), q.grad, **tol, msg=f"{name} d{k}")
    return fast


@pytest.mark.parametrize("name", FAST)
def test_cuda_path_matches_reference(name):
    check(name)
    want = {"detachnorm": cuda._ln, "adanorm": cuda._adanorm}.get(
        name
    )  # the others: torch's kernels
    assert want is None or want in cuda._compiled  # the compiled path ran, not a fallback


def test_cuda_path_detached_gradients_differ_from_layernorms():
    # the check above would pass for a path that silently ignored the detach only if the
    # gradients were the same: they are not
    torch.manual_seed(0)
    x = torch.randn(8, 48, requires_grad=True)
    g = torch.randn(8, 48)
    grads = []
    for name in ("layernorm_simple", "detachnorm"):
        with cuda.forced():
            build_norm(name, 48)(x).backward(g)
        grads.append(x.grad.clone())
        x.grad = None
    assert (grads[0] - grads[1]).abs().max() > 0.1


def test_cuda_path_half_input_keeps_fp32_statistics():
    check("detachnorm", dtype=torch.bfloat16)


@pytest.mark.slow
@pytest.mark.parametrize("name", SLOW + ["official"])
def test_cuda_path_matches_reference_slow(name):
    if name == "official":
        for n in ("layernorm", "adanorm", "rmsnorm", "detach_var"):
            check(n, {"numerics": "official"})
    else:
        check(name)
