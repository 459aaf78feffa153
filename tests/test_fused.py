"""The fast paths (impl="fused") against the plain reference math (impl="reference",
functional.py): outputs, input gradients (detached ones included) and parameter gradients, in
float64 and float32, both numerics, channels-last and channels-first. Every test runs twice:
with the native CPU kernels (normlab/norms/native.py, csrc/) and with them disabled,
on the tensor-op paths (normlab/norms/fused*.py) that CUDA, half precision and machines without
a compiler run.

The reference itself is checked against independent formulas in test_norms.py and
test_norms_grad.py; those tests build modules with the default impl, so they check the fast
paths too. Here every variant and option combination is compared directly.
"""

from __future__ import annotations

import pytest
import torch

from normlab.norms import NORMS, build_norm, native, norm_options
from normlab.norms import layers as L


@pytest.fixture(autouse=True, params=["native", "tensorops"])
def fast_path(request):
    if request.param == "tensorops":
        with native.disabled():
            yield request.param
    else:
        if native.load() is None:
            pytest.skip("native kernels unavailable here (test_native.py says why)")
        yield request.param


H = 24
CASES = [  # (id, builder(dim, impl, channels_first))
    *[
        (
            f"{name}-{num}",
            lambda d, impl, cf, name=name, num=num: build_norm(
                name, d, numerics=num, impl=impl, channels_first=cf
            ),
        )
        for name in (
            "layernorm",
            "layernorm_simple",
            "detachnorm",
            "detach_mean",
            "detach_var",
            "adanorm",
            "rmsnorm",
        )
        for num in ("paper", "official")
    ],
    *[
        (
            f"adanorm-C2k03-{num}",
            lambda d, impl, cf, num=num: build_norm(
                "adanorm", d, C=2.0, k=0.3, numerics=num, impl=impl, channels_first=cf
            ),
        )
        for num in ("paper", "official")
    ],
    *[
        (
            f"{name}-noaffine",
            lambda d, impl, cf, name=name: build_norm(
                name, d, affine=False, impl=impl, channels_first=cf
            ),
        )
        for name in ("rmsnorm", "dyt", "derf")
    ],
    (
        "rmsnorm-official-noaffine",
        lambda d, impl, cf: build_norm(
            "rmsnorm", d, affine=False, numerics="official", impl=impl, channels_first=cf
        ),
    ),
    ("dyt", lambda d, impl, cf: build_norm("dyt", d, impl=impl, channels_first=cf)),
    ("scalenorm", lambda d, impl, cf: build_norm("scalenorm", d, impl=impl, channels_first=cf)),
    (
        "derf",
        lambda d, impl, cf: build_norm("derf", d, shift_init=0.2, impl=impl, channels_first=cf),
    ),
    ("bhyt", lambda d, impl, cf: build_norm("bhyt", d, impl=impl, channels_first=cf)),
    (
        "bhyt-learned-noaffine",
        lambda d, impl, cf: build_norm(
            "bhyt", d, lam=9.0, learn_lam=True, affine=False, impl=impl, channels_first=cf
        ),
    ),
    ("dyisru", lambda d, impl, cf: build_norm("dyisru", d, impl=impl, channels_first=cf)),
    (
        "dyisru-softplus-sqrtdim-noaffine",
        lambda d, impl, cf: build_norm(
            "dyisru", d, softplus=True, sqrt_dim=True, affine=False, impl=impl, channels_first=cf
        ),
    ),
    ("seednorm", lambda d, impl, cf: build_norm("seednorm", d, impl=impl, channels_first=cf)),
    (
        "seednorm-2heads",
        lambda d, impl, cf: build_norm("seednorm", d, heads=2, impl=impl, channels_first=cf),
    ),
    # the LayerNorm class also allows a gain and bias with detached statistics
    *[
        (
            f"affine-{dm:d}{dv:d}-{num}",
            lambda d, impl, cf, dm=dm, dv=dv, num=num: L.LayerNormFamily(
                d,
                affine=True,
                detach_mean=dm,
                detach_var=dv,
                numerics=num,
                impl=impl,
                channels_first=cf,
            ),
        )
        for dm, dv in ((True, False), (False, True), (True, True))
        for num in ("paper", "official")
    ],
]
# largest difference relative to the largest magnitude of the reference's tensor. In float32 the
# scalar parameters' gradients (DyT/Derf alpha, ScaleNorm g) sum a few hundred terms of both
# signs, and two summation orders differ by up to ~1e-5; a wrong formula is off by > 1e-2.
TOL = {torch.float64: 1e-12, torch.float32: 3e-5}


def xin(*shape, seed=0, dtype=torch.float64):
    gen = torch.Generator().manual_seed(seed)
    return (torch.randn(*shape, generator=gen, dtype=torch.float64) * 2.0 + 0.7).to(dtype)


def pair(build, dtype, cf=False, d=H):
    """(fused, reference) modules with the same non-default parameters."""
    ref = build(d, "reference", cf).to(dtype)
    gen = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for p in ref.parameters():
            p.copy_(1.0 + 0.3 * torch.randn(p.shape, generator=gen, dtype=torch.float64))
    fused = build(d, "fused", cf).to(dtype)
    fused.load_state_dict(ref.state_dict())
    assert fused.impl == "fused" and ref.impl == "reference"
    return fused, ref


def run(module, x, g):
    x = x.detach().clone().requires_grad_()
    y = module(x)
    grads = torch.autograd.grad(y, [x, *module.parameters()], g)
    return [y, *grads]


def assert_match(got, want, tol, what):
    assert got.shape == want.shape and got.dtype == want.dtype, what
    scale = want.abs().max()
    # an all-zero reference (SeeDNorm's beta gradient where every row's tanh saturated) must be met
    # by an all-zero result
    err = ((got - want).abs().max() / scale if scale > 0 else got.abs().max()).item()
    assert err <= tol, f"{what}: relative difference {err:.2e} > {tol:.0e}"


@pytest.mark.parametrize("cf", [False, True], ids=["last", "channels_first"])
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32], ids=["f64", "f32"])
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_fused_matches_reference(case, dtype, cf):
    name, build = case
    fused, ref = pair(build, dtype, cf)
    shape = (2, H, 3, 4) if cf else (3, 5, H)
    x, g = xin(*shape, dtype=dtype), xin(*shape, seed=2, dtype=dtype) * 0.5 + 0.3
    got, want = run(fused, x, g), run(ref, x, g)
    labels = ["output", "input grad"] + [f"grad of {n}" for n, _ in ref.named_parameters()]
    assert len(got) == len(want) == len(labels)
    for a, b, what in zip(got, want, labels):
        assert_match(a, b, TOL[dtype], f"{name} {what}")


def test_wide_rows_and_many_rows():
    # the kernels' vectorised inner loops and multi-row blocking (H = 8 to 24 is mostly tails)
    x, g = xin(64, 1000, dtype=torch.float32), xin(64, 1000, seed=3, dtype=torch.float32)
    for name, build in CASES:
        fused, ref = pair(build, torch.float32, d=1000)
        for a, b in zip(run(fused, x, g), run(ref, x, g)):
            assert_match(a, b, TOL[torch.float32], name)


def test_detached_gradients_differ_from_full():
    # guards the comparison above: the detached variants' gradients really are different
    x, g = xin(4, H), xin(4, H, seed=2) + 0.3
    full = run(build_norm("layernorm_simple", H), x, g)[1]
    for name in ("detachnorm", "detach_mean", "detach_var"):
        for impl in ("fused", "reference"):
            assert (run(build_norm(name, H, impl=impl), x, g)[1] - full).abs().max() > 1e-3, (
                name,
                impl,
            )


# ---------------------------------------------------------------------------- edge rows


def test_zero_row_rmsnorm_official_and_scalenorm():
    # ||x|| = 0: RMS official divides by (0 + eps), ScaleNorm clamps the norm; finite gradients
    x = xin(3, H)
    x[1] = 0.0
    x[2] *= 1e-9  # below ScaleNorm's eps: the clamp is active, the norm a constant
    g = xin(3, H, seed=2)
    for build in (
        lambda d, impl, cf: build_norm("rmsnorm", d, numerics="official", impl=impl),
        lambda d, impl, cf: build_norm("scalenorm", d, impl=impl),
    ):
        fused, ref = pair(build, torch.float64)
        got, want = run(fused, x, g), run(ref, x, g)
        for a, b in zip(got, want):
            assert torch.isfinite(a).all()
            assert_match(a, b, 1e-12, type(fused).__name__)


@pytest.mark.parametrize("name", ["layernorm", "layernorm_simple", "detach_mean", "adanorm"])
def test_constant_row_official_like_reference(name):
    # std = 0: y = 0 / (0 + eps); torch's std backward is 0 there, leaving (g - mean g) / eps
    x = xin(2, H)
    x[0] = 0.25
    g = xin(2, H, seed=2)
    fused, ref = pair(
        lambda d, impl, cf: build_norm(name, d, numerics="official", impl=impl), torch.float64
    )
    got, want = run(fused, x, g), run(ref, x, g)
    assert torch.isfinite(want[1]).all() and want[1][0].abs().max() > 1e3  # r = 1/eps
    for a, b in zip(got, want):
        assert_match(a, b, 1e-12, name)


# ------------------------------------------------------------------------ saved memory


def saved_bytes(module, x, min_numel=0) -> int:
    """Bytes of the distinct storages autograd keeps for backward (the input's included) that
    hold more than ``min_numel`` elements."""
    seen = {}

    def pack(t):
        st = t.untyped_storage()
        if st.nbytes() > min_numel * t.element_size():
            seen[st.data_ptr()] = st.nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        module(x.detach().clone().requires_grad_())
    return sum(seen.values())


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_fused_saves_no_more_than_reference(case):
    name, build = case
    fused, ref = pair(build, torch.float32, d=256)
    x = xin(32, 256, dtype=torch.float32)
    # activation-sized storages only: per-row statistics and scalars are a rounding error
    assert saved_bytes(fused, x, 256) <= saved_bytes(ref, x, 256), name


@pytest.mark.parametrize("name", ["detachnorm", "detach_var"])
def test_detached_sigma_saves_only_row_statistics(name):
    # dL/dx = r g or r (g - mean g): one number per row, not the input
    x = xin(32, 256, dtype=torch.float32)
    assert saved_bytes(build_norm(name, 256), x) == 32 * 4


# --------------------------------------------------------------------------- impl option


def test_impl_option_everywhere():
    for name in NORMS:
        assert "impl" in norm_options(name), name
        assert build_norm(name, H).impl == "fused"
        assert build_norm(name, H, impl="reference").impl == "reference"
    with pytest.raises(ValueError, match="impl"):
        build_norm("layernorm", H, impl="compiled")


def test_reference_supports_double_backward_fused_does_not():
    x = xin(3, H).requires_grad_()
    for impl, ok in (("reference", True), ("fused", False)):
        y = build_norm("adanorm", H, impl=impl)(x)
        (gx,) = torch.autograd.grad(y.pow(2).sum(), x, create_graph=True)
        if ok:
            torch.autograd.grad(gx.sum(), x)
        else:
            with pytest.raises(RuntimeError):
                torch.autograd.grad(gx.sum(), x)


def test_bfloat16_runs_close_to_reference():
    x, g = xin(8, 64, dtype=torch.bfloat16), xin(8, 64, seed=2, dtype=torch.bfloat16)
    for name, build in CASES:
        fused, ref = pair(build, torch.bfloat16, d=64)
        for a, b in zip(run(fused, x, g), run(ref, x, g)):
            assert a.dtype == b.dtype == torch.bfloat16, name
            assert_match(a.float(), b.float(), 0.05, name)
