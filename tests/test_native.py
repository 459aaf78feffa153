"""The native CPU kernels (normlab/norms/csrc/ via native.py): that they build where a
compiler is, the accuracy of their float32 tanh/erf/exp, NaN propagation, thread-count
independence, and the fallback when they can't be built. Their agreement with the reference
math for every variant is tested in test_fused.py."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from normlab.norms import build_norm, native

ROOT = Path(__file__).resolve().parents[1]
needs_native = pytest.mark.skipif(
    os.environ.get("NORMLAB_NATIVE") == "0" or shutil.which("c++") is None,
    reason="native kernels disabled or no C++ compiler",
)


@needs_native
def test_extension_builds_with_a_compiler():
    assert native.load() is not None, "see the RuntimeWarning: the extension failed to build"
    assert native.describe().startswith("built for")


def grid(lo, hi, n=2_000_001):
    return torch.linspace(lo, hi, n, dtype=torch.float64)


@needs_native
@pytest.mark.parametrize(
    "fn,ref,lo,hi",
    [(0, torch.tanh, -12, 12), (1, torch.erf, -8, 8), (2, torch.exp, -80, 0)],
    ids=["tanh", "erf", "exp"],
)
def test_float32_functions_accurate(fn, ref, lo, hi):
    # exp only serves exp(-u^2) in Derf's backward, hence x <= 0. The bounds are ~3x torch's own
    # float32 functions (~1.2e-7 here); a wrong coefficient shows up as > 1e-5.
    x = grid(lo, hi)
    got = native.load().float_math(x.float(), fn).double()
    want = ref(x.float().double())  # the exact function at the float32 inputs
    rel = ((got - want).abs() / want.abs().clamp_min(1e-30)).max().item()
    assert rel < 5e-7, rel
    tiny = torch.tensor([1e-30, -1e-20, 1e-8], dtype=torch.float32)
    if fn < 2:  # odd functions stay relatively accurate near 0
        got = native.load().float_math(tiny, fn).double()
        assert ((got - ref(tiny.double())).abs() / ref(tiny.double()).abs()).max() < 5e-7


@needs_native
def test_float32_functions_special_values():
    m = native.load()
    x = torch.tensor([float("nan"), float("inf"), -float("inf"), 0.0])
    for fn in (0, 1):  # tanh, erf
        y = m.float_math(x, fn)
        assert torch.isnan(y[0]) and y[1] == 1.0 and y[2] == -1.0 and y[3] == 0.0


@needs_native
@pytest.mark.parametrize(
    "name", ["layernorm_simple", "adanorm", "rmsnorm", "scalenorm", "dyt", "derf"]
)
def test_nan_reaches_output_and_gradient(name):
    # a diverging run must look diverged: NaN in, NaN out, in forward and backward
    x = torch.randn(4, 32)
    x[1, 3] = float("nan")
    x.requires_grad_()
    norm = build_norm(name, 32)
    y = norm(x)
    assert torch.isnan(y[1]).any() and torch.isfinite(y[[0, 2, 3]]).all()
    (gx,) = torch.autograd.grad(y, x, torch.ones_like(y))
    assert torch.isnan(gx[1]).any() and torch.isfinite(gx[[0, 2, 3]]).all()


@needs_native
@pytest.mark.parametrize(
    "name", ["layernorm", "detach_mean", "adanorm", "rmsnorm", "scalenorm", "dyt", "derf"]
)
def test_same_results_with_one_and_two_threads(name):
    # 4096 rows of 64 are split into several tasks; column sums go through per-thread buffers
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(4096, 64, generator=gen) * 2 + 0.5
    g = torch.randn(4096, 64, generator=gen)
    norm = build_norm(name, 64)
    with torch.no_grad():
        for p in norm.parameters():
            p.add_(0.1 * torch.randn(p.shape, generator=gen))
    ref = build_norm(name, 64, impl="reference")
    ref.load_state_dict(norm.state_dict())

    def run(m):
        xx = x.clone().requires_grad_()
        y = m(xx)
        return [y, *torch.autograd.grad(y, [xx, *m.parameters()], g)]

    threads = torch.get_num_threads()
    try:
        results = {}
        for t in (1, 2):
            torch.set_num_threads(t)
            results[t] = run(norm)
    finally:
        torch.set_num_threads(threads)
    want = run(ref)
    for a, b, r in zip(results[1], results[2], want):
        scale = r.abs().max()
        assert ((a - b).abs().max() / scale) < 1e-5
        assert ((a - r).abs().max() / scale) < 3e-5


def test_fallback_when_the_build_fails(tmp_path):
    # an unusable build directory: one warning, then the tensor-op paths give the same numbers
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    code = (
        "import warnings, torch\n"
        "from normlab.norms import build_norm, native\n"
        "with warnings.catch_warnings(record=True) as w:\n"
        "    warnings.simplefilter('always')\n"
        "    x = torch.randn(8, 16, dtype=torch.float64, requires_grad=True)\n"
        "    y = build_norm('dyt', 16)(x); build_norm('adanorm', 16)(x)\n"
        "ref = build_norm('dyt', 16, impl='reference')(x)\n"
        "assert native.load() is None and (y - ref).abs().max() < 1e-12\n"
        "msgs = [str(m.message) for m in w if 'native CPU norm kernels' in str(m.message)]\n"
        "assert len(msgs) == 1, msgs\n"
        "print(msgs[0])\n"
    )
    env = {**os.environ, "NORMLAB_EXT_DIR": str(blocker / "sub"), "NORMLAB_NATIVE": "1"}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    assert "tensor-op fast paths" in out.stdout


def test_usable_only_for_float_cpu_tensors():
    assert not native.usable(torch.zeros(2, 4, dtype=torch.bfloat16))
    assert not native.usable(torch.zeros(2, 4, dtype=torch.float16))
    assert not native.usable(torch.zeros(2, 4), torch.zeros(4, dtype=torch.float64))
    with native.disabled():
        assert not native.usable(torch.zeros(2, 4))
