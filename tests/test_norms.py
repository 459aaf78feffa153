"""Forward math, registry, convert_norms, param groups, GradProbe and configs of normlab.norms.

Every expected value here is written out independently of normlab/norms/functional.py, so a
change of the math there (eps placement, std estimator, detach) makes a test fail.
Gradient tests (gradcheck, detached gradients, Theorem 1) live in test_norms_grad.py.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch
import yaml
from torch import nn

from normlab.norms import (
    NORMS,
    GradProbe,
    Norm,
    build_norm,
    convert_norms,
    grad_stats,
    norm_options,
    param_groups,
)

REPO = Path(__file__).resolve().parents[1]
H = 8  # hidden size: small, so that the unbiased/biased std factor sqrt(H/(H-1)) is visible


# ---------------------------------------------------------------- independent reference math


def ref_ln_simple(x, eps=1e-5, numerics="paper"):
    """(x - mu) / sigma written with explicit sums (not x.var / x.std)."""
    n = x.shape[-1]
    mu = x.sum(-1, keepdim=True) / n
    ss = ((x - mu) ** 2).sum(-1, keepdim=True)
    if numerics == "paper":  # biased variance, eps inside the square root
        return (x - mu) / torch.sqrt(ss / n + eps)
    return (x - mu) / (torch.sqrt(ss / (n - 1)) + eps)  # unbiased std, eps outside


def ref_rms(x, eps=1e-5, numerics="paper"):
    n = x.shape[-1]
    ms = (x**2).sum(-1, keepdim=True) / n
    if numerics == "paper":
        return x / torch.sqrt(ms + eps)
    return x / (torch.sqrt(ms) + eps)


def randomize(module: nn.Module, seed: int = 0) -> nn.Module:
    """Give every parameter a non-default value, so a forward that ignores it is caught."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(1.0 + 0.5 * torch.randn(p.shape, generator=gen, dtype=p.dtype))
    return module


def xin(*shape, seed=0, dtype=torch.float64):
    gen = torch.Generator().manual_seed(seed)
    # a non-zero mean and a per-token scale, so that centring and scaling both matter
    return torch.randn(*shape, generator=gen, dtype=dtype) * 2.0 + 0.7


# ------------------------------------------------------------------------- 1. forward formulas

EPS = [1e-5, 0.5]  # 0.5 makes eps placement (inside sqrt vs added to std) visible


@pytest.mark.parametrize("eps", EPS)
@pytest.mark.parametrize("numerics", ["paper", "official"])
def test_layernorm_forward(eps, numerics):
    m = randomize(build_norm("layernorm", H, eps=eps, numerics=numerics).double())
    x = xin(3, 5, H)
    expect = ref_ln_simple(x, eps, numerics) * m.weight + m.bias
    torch.testing.assert_close(m(x), expect, rtol=0, atol=1e-12)


@pytest.mark.parametrize("name", ["layernorm_simple", "detachnorm", "detach_mean", "detach_var"])
@pytest.mark.parametrize("eps", EPS)
@pytest.mark.parametrize("numerics", ["paper", "official"])
def test_ln_simple_family_forward(name, eps, numerics):
    # detaching changes backward only: every member's forward is LN-simple, with no parameters
    m = build_norm(name, H, eps=eps, numerics=numerics)
    assert list(m.parameters()) == []
    x = xin(4, H)
    torch.testing.assert_close(m(x), ref_ln_simple(x, eps, numerics), rtol=0, atol=1e-12)


def test_numerics_differ():
    # guards the reference: if both numerics gave the same output the tests above prove nothing
    x = xin(4, H)
    a = build_norm("layernorm_simple", H, numerics="paper")(x)
    b = build_norm("layernorm_simple", H, numerics="official")(x)
    assert (a - b).abs().max() > 1e-2


@pytest.mark.parametrize("C,k", [(1.0, 0.1), (2.0, 0.1), (2.0, 0.3)])
@pytest.mark.parametrize("numerics", ["paper", "official"])
def test_adanorm_forward(C, k, numerics):
    m = build_norm("adanorm", H, C=C, k=k, numerics=numerics)
    x = xin(2, 3, H)
    y = ref_ln_simple(x, 1e-5, numerics)
    torch.testing.assert_close(m(x), C * (1 - k * y) * y, rtol=0, atol=1e-12)


@pytest.mark.parametrize("eps", EPS)
@pytest.mark.parametrize("numerics", ["paper", "official"])
def test_rmsnorm_forward(eps, numerics):
    m = randomize(build_norm("rmsnorm", H, eps=eps, numerics=numerics).double())
    x = xin(3, H)
    torch.testing.assert_close(m(x), ref_rms(x, eps, numerics) * m.weight, rtol=0, atol=1e-12)
    bare = build_norm("rmsnorm", H, eps=eps, numerics=numerics, affine=False)
    assert list(bare.parameters()) == []
    torch.testing.assert_close(bare(x), ref_rms(x, eps, numerics), rtol=0, atol=1e-12)


def test_none_is_identity():
    x = xin(2, 3, H)
    assert build_norm("none", H)(x) is x


def test_dyt_forward():
    m = randomize(build_norm("dyt", H, alpha_init=0.8).double())
    assert m.alpha.shape == (1,)
    x = xin(3, H)
    expect = m.weight * torch.tanh(m.alpha * x) + m.bias
    torch.testing.assert_close(m(x), expect, rtol=0, atol=1e-12)


def test_dyt_init():
    m = build_norm("dyt", H, alpha_init=0.8)
    assert m.alpha.item() == pytest.approx(0.8)
    assert torch.equal(m.weight, torch.ones(H)) and torch.equal(m.bias, torch.zeros(H))


def test_derf_forward():
    m = randomize(build_norm("derf", H).double())
    assert m.shift.item() != 0  # randomize gave the shift a value that matters
    x = xin(3, H)
    # erf through math.erf, element by element, independent of torch.erf
    inner = (m.alpha * x + m.shift).detach()
    erf = torch.tensor([math.erf(v) for v in inner.flatten().tolist()], dtype=x.dtype).view_as(x)
    torch.testing.assert_close(m(x), m.weight * erf + m.bias, rtol=0, atol=1e-12)


def test_scalenorm_forward():
    m = build_norm("scalenorm", H).double()
    assert m.g.item() == pytest.approx(math.sqrt(H))  # sqrt(d) init: unit RMS output at init
    with torch.no_grad():
        m.g.fill_(1.7)
    x = xin(3, H)
    norm = torch.sqrt((x**2).sum(-1, keepdim=True))
    torch.testing.assert_close(m(x), 1.7 * x / norm, rtol=0, atol=1e-12)


def test_wrong_feature_count_raises():
    with pytest.raises(ValueError, match="features"):
        build_norm("layernorm", H)(torch.randn(2, H + 1))


@pytest.mark.parametrize("name", list(NORMS))
def test_channels_first(name):
    # (N, C, H, W) with channels_first=True must equal normalizing the channels-last view
    torch.manual_seed(0)
    last = randomize(build_norm(name, H).double())
    first = build_norm(name, H, channels_first=True).double()
    first.load_state_dict(last.state_dict())
    x = xin(2, H, 3, 4)
    out = first(x)
    assert out.shape == x.shape
    torch.testing.assert_close(out, last(x.movedim(1, -1)).movedim(-1, 1), rtol=0, atol=1e-12)


# ----------------------------------------------------------- 5. parity with torch's own layers


def test_layernorm_matches_torch():
    ours = randomize(build_norm("layernorm", H, eps=1e-5).double())
    ref = nn.LayerNorm(H, eps=1e-5).double()
    ref.load_state_dict({"weight": ours.weight.detach(), "bias": ours.bias.detach()})
    _assert_same_forward_backward(ours, ref)


def test_rmsnorm_matches_torch():
    ours = randomize(build_norm("rmsnorm", H, eps=1e-5).double())
    ref = nn.RMSNorm(H, eps=1e-5).double()
    ref.load_state_dict({"weight": ours.weight.detach()})
    _assert_same_forward_backward(ours, ref)


def _assert_same_forward_backward(ours, ref):
    x1 = xin(3, 5, H).requires_grad_()
    x2 = x1.detach().clone().requires_grad_()
    g = xin(3, 5, H, seed=1)
    y1, y2 = ours(x1), ref(x2)
    torch.testing.assert_close(y1, y2, rtol=0, atol=1e-12)
    y1.backward(g)
    y2.backward(g)
    torch.testing.assert_close(x1.grad, x2.grad, rtol=0, atol=1e-11)
    for (n1, p1), (n2, p2) in zip(ours.named_parameters(), ref.named_parameters()):
        assert n1 == n2
        torch.testing.assert_close(p1.grad, p2.grad, rtol=0, atol=1e-11)


# -------------------------------------------------------------------------- 6. build_norm errors


def test_unknown_name_lists_valid_names():
    with pytest.raises(ValueError) as err:
        build_norm("groupnorm", H)
    for name in NORMS:
        assert name in str(err.value)


def test_unknown_option_lists_valid_options():
    with pytest.raises(ValueError) as err:
        build_norm("adanorm", H, C=2.0, kk=0.1)
    msg = str(err.value)
    assert "kk" in msg
    for opt in norm_options("adanorm"):
        assert opt in msg


def test_bad_numerics_raises():
    with pytest.raises(ValueError, match="numerics"):
        build_norm("layernorm", H, numerics="fused")


# ------------------------------------------------------------------------- 7. convert_norms


def tiny_transformer():
    torch.manual_seed(0)
    return nn.Transformer(
        d_model=16,
        nhead=2,
        num_encoder_layers=2,
        num_decoder_layers=2,
        dim_feedforward=32,
        dropout=0.0,
        batch_first=True,
    )


N_LAYERNORMS = 2 * 2 + 1 + 2 * 3 + 1  # encoder layers, encoder final, decoder layers, decoder final


@pytest.mark.parametrize(
    "name,options",
    [
        ("none", {}),
        ("layernorm", {"numerics": "official"}),
        ("layernorm_simple", {}),
        ("detachnorm", {}),
        ("detach_var", {}),
        ("adanorm", {"C": 2.0}),
        ("rmsnorm", {}),
        ("dyt", {}),
        ("scalenorm", {}),
        ("derf", {}),
    ],
)
def test_convert_transformer_trains(name, options):
    model = tiny_transformer()
    assert sum(isinstance(m, nn.LayerNorm) for m in model.modules()) == N_LAYERNORMS
    convert_norms(model, name, **options)
    assert not any(isinstance(m, nn.LayerNorm) for m in model.modules())
    expected_type = type(build_norm(name, 16, **options))
    assert sum(type(m) is expected_type for m in model.modules()) == N_LAYERNORMS

    src, tgt = torch.randn(2, 5, 16), torch.randn(2, 4, 16)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    before = [p.detach().clone() for p in model.parameters()]
    loss = (model(src, tgt) - 1.0).pow(2).mean()
    assert torch.isfinite(loss)
    loss.backward()
    opt.step()
    assert all(torch.isfinite(p).all() for p in model.parameters())
    changed = sum(not torch.equal(b, p) for b, p in zip(before, model.parameters()))
    assert changed > len(before) // 2

    # eval mode must run the converted norms too: nn.TransformerEncoderLayer's inference fast
    # path reads norm1.eps/weight/bias and applies torch's LayerNorm kernel (crash, or silently
    # wrong math for anything but paper-numerics LayerNorm), and with a padding mask
    # nn.TransformerEncoder hands nested tensors to the layers
    pad = torch.tensor([[False] * 5, [False] * 3 + [True] * 2])
    for kwargs in ({}, {"src_key_padding_mask": pad, "memory_key_padding_mask": pad}):
        model.train()
        with torch.no_grad():
            train_out = model(src, tgt, **kwargs)
        model.eval()
        with torch.no_grad():
            eval_out = model(src, tgt, **kwargs)
        torch.testing.assert_close(eval_out, train_out, rtol=1e-5, atol=1e-5)


def test_convert_keeps_dtype_and_channels_first():
    model = nn.Sequential(
        nn.Conv2d(3, H, 1),
        build_norm("layernorm", H, channels_first=True),
        nn.Flatten(),
        nn.Linear(H * 4, 2),
        nn.LayerNorm(2),
    ).double()
    convert_norms(model, "dyt")
    assert model[1].channels_first and not model[4].channels_first
    assert all(p.dtype == torch.float64 for p in model.parameters())
    assert model(torch.randn(2, 3, 2, 2, dtype=torch.float64)).shape == (2, 2)


def test_convert_validates_before_touching_model():
    model = tiny_transformer()
    with pytest.raises(ValueError):
        convert_norms(model, "dyt", alpha=0.5)
    assert sum(isinstance(m, nn.LayerNorm) for m in model.modules()) == N_LAYERNORMS


# --------------------------------------------------------------------------- 8. param_groups


# the vectors a norm's paper decays as part of its definition (SeeDNorm's stabilisation)
DECAYED = {"seednorm": {"1.alpha", "1.beta"}}


@pytest.mark.parametrize("name", list(NORMS))
def test_param_groups_no_decay_on_vectors(name):
    model = nn.Sequential(nn.Linear(4, H), build_norm(name, H), nn.Linear(H, 3))
    groups = param_groups(model, weight_decay=0.1)
    by_id = {id(p): g["weight_decay"] for g in groups for p in g["params"]}
    # every trainable parameter in exactly one group
    assert sum(len(g["params"]) for g in groups) == len(by_id) == len(list(model.parameters()))
    marked = DECAYED.get(name, set())
    for n, p in model.named_parameters():
        assert by_id[id(p)] == (0.1 if p.dim() >= 2 or n in marked else 0.0), n
    # the norm's other parameters (gains, biases, alpha, shift, g) are all no-decay
    for n, p in model[1].named_parameters():
        assert by_id[id(p)] == (0.1 if f"1.{n}" in marked else 0.0), n
    assert by_id[id(model[0].weight)] == 0.1 and by_id[id(model[2].weight)] == 0.1


def test_seednorm_without_decay_dynamic_decays_no_vector():
    model = nn.Sequential(nn.Linear(4, H), build_norm("seednorm", H, decay_dynamic=False))
    groups = param_groups(model, weight_decay=0.1)
    # the Linear's matrix; its bias and the norm's alpha, beta, gamma
    assert [len(g["params"]) for g in groups] == [1, 4]


def test_param_groups_scalars_present():
    # DyT alpha (shape (1,)) and ScaleNorm g (0-dim) must not be lost or decayed
    for name, attr in [("dyt", "alpha"), ("scalenorm", "g"), ("derf", "shift")]:
        norm = build_norm(name, H)
        groups = param_groups(nn.Sequential(nn.Linear(H, H), norm), weight_decay=0.5)
        no_decay = next(g for g in groups if g["weight_decay"] == 0.0)
        assert any(p is getattr(norm, attr) for p in no_decay["params"])


# ------------------------------------------------------------------------------ 9. GradProbe


def _probe_model(name):
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(6, H), build_norm(name, H), nn.Linear(H, 3)).double()


def _hand_stats(g):
    """Per-token mean / |mean| / population var over the hidden dim, averaged over tokens."""
    g = g.reshape(-1, g.shape[-1])
    m = g.sum(-1) / g.shape[-1]
    v = ((g - m[:, None]) ** 2).sum(-1) / g.shape[-1]
    return {"mean": m.mean().item(), "absmean": m.abs().mean().item(), "var": v.mean().item()}


@pytest.mark.parametrize("name", ["layernorm_simple", "detachnorm"])
def test_grad_probe_matches_hand(name):
    model = _probe_model(name)
    lin1, norm, lin2 = model
    hand = []
    with GradProbe(model) as probe:
        for step in range(2):  # two backward passes: pop() averages over them
            x = xin(4, 5, 6, seed=step)
            h = lin1(x)
            h.retain_grad()
            z = norm(h)  # called as a module, so the probe's backward hook fires
            z.retain_grad()
            (lin2(z) * torch.arange(1.0, 4.0, dtype=torch.float64)).sum().backward()
            hand.append({"in": _hand_stats(h.grad), "out": _hand_stats(z.grad)})
            # Theorem 1's sigma: population std of the norm's input per token, by hand.
            hh = h.detach().reshape(-1, H)
            sig = (((hh - hh.sum(-1, keepdim=True) / H) ** 2).sum(-1) / H).sqrt()
            gi = h.grad.reshape(-1, H)
            vi = ((gi - gi.sum(-1, keepdim=True) / H) ** 2).sum(-1) / H
            hand[-1]["in"].update(var_s2=(vi * sig**2).mean().item(), sigma=sig.mean().item())
        got = probe.pop()
    for side in ("in", "out"):
        for stat in ("mean", "absmean", "var"):
            expect = (hand[0][side][stat] + hand[1][side][stat]) / 2
            assert got[f"grad/1/{side}_{stat}"] == pytest.approx(expect, rel=1e-9, abs=1e-14)
            assert got[f"grad/all/{side}_{stat}"] == got[f"grad/1/{side}_{stat}"]

    for stat in ("var_s2", "sigma"):
        expect = (hand[0]["in"][stat] + hand[1]["in"][stat]) / 2
        assert got[f"grad/1/in_{stat}"] == pytest.approx(expect, rel=1e-9)
    ratio = got["grad/1/in_var_s2"] / got["grad/1/out_var"]
    assert (
        got["grad/1/ratio_s2"] == pytest.approx(ratio)
        and got["grad/all/ratio_s2"] == got["grad/1/ratio_s2"]
    )
    # Theorem 1 in the sigma^2-normalized ratio: DetachNorm passes Var = D_g / sigma^2 exactly (up to the
    # eps in its sigma), LN-simple's projection removes components, so strictly below 1 here.
    if name == "detachnorm":
        assert ratio == pytest.approx(1.0, abs=1e-4)
    else:
        assert ratio < 0.99
    # the upstream gradient is not centred; LN-simple centres it per token, DetachNorm does not
    assert got["grad/1/out_absmean"] > 1e-3
    if name == "layernorm_simple":
        assert got["grad/1/in_absmean"] < 1e-12
    else:
        assert got["grad/1/in_absmean"] > 1e-3
    assert probe.pop() == {}  # pop() resets


def test_grad_probe_detaches_hooks():
    model = _probe_model("layernorm_simple")
    with GradProbe(model) as probe:
        pass
    model(xin(2, 6)).sum().backward()
    assert probe.pop() == {}


def test_grad_stats_channels_first():
    g = xin(2, H, 3, 3)
    assert grad_stats(g, channels_first=True) == pytest.approx(_hand_stats(g.movedim(1, -1)))


# ---------------------------------------------------------------------- 10. configs/norm/*.yaml


def test_norm_configs_match_registry():
    cfg_dir = REPO / "normlab" / "configs" / "norm"
    files = {p.stem: p for p in cfg_dir.glob("*.yaml")}
    # normlab's own norms (a plugin installed beside it brings its configs in its own package)
    own = {n for n, f in NORMS.items() if f.__module__.startswith("normlab.")}
    assert set(files) == own, "a NORMS key without a config, or a config without a key"
    for key, path in files.items():
        cfg = yaml.safe_load(path.read_text())
        assert cfg["name"] == key, path
        options = cfg.get("options") or {}
        assert set(options) <= set(norm_options(key)), (path, options)
        assert isinstance(build_norm(key, H, **options), nn.Module)


def test_every_norm_is_a_normlab_norm():
    for name in NORMS:
        assert isinstance(build_norm(name, H), Norm), name


@pytest.mark.parametrize("name", ["layernorm_simple", "detachnorm"])
def test_grad_probe_sigma_ratio_channels_first(name):
    # MNIST's norms act over channels of (N, C, H, W): sigma is taken per pixel over C, like the norm.
    torch.manual_seed(0)
    conv = nn.Conv2d(2, H, 3).double()
    model = nn.Sequential(conv, build_norm(name, H, channels_first=True)).double()
    with GradProbe(model) as probe:
        x = xin(3, 2, 6, 6, seed=1)
        out = model(x)
        (out * xin(*out.shape, seed=2)).sum().backward()  # an uncentred upstream gradient
        got = probe.pop()
    ratio = got["grad/1/ratio_s2"]
    assert ratio == pytest.approx(1.0, abs=1e-4) if name == "detachnorm" else ratio < 0.99
    assert got["grad/1/in_sigma"] > 0


@pytest.mark.parametrize("name,shift", [("dyt", None), ("derf", 0.3)])
def test_grad_probe_logs_alpha_and_the_share_past_the_knee(name, shift):
    from normlab.norms.probe import KNEE

    model = _probe_model(name)
    lin1, norm, lin2 = model
    with torch.no_grad():
        norm.alpha.fill_(0.7)
        if shift is not None:
            norm.shift.fill_(shift)
    shares = []
    with GradProbe(model) as probe:
        for step in range(2):
            x = xin(4, 5, 6, seed=step) * 3.0  # wide inputs: some past the knee, some not
            h = lin1(x)
            shares.append(((0.7 * h.detach() + (shift or 0.0)).abs() > KNEE).double().mean().item())
            lin2(norm(h)).sum().backward()
        got = probe.pop()
    assert 0.0 < shares[0] < 1.0
    assert got["alpha/1/alpha"] == pytest.approx(0.7)
    assert got["alpha/1/saturated"] == pytest.approx(sum(shares) / 2, rel=1e-12)
    assert got["alpha/all/saturated"] == got["alpha/1/saturated"]
    assert "grad/all/alpha" not in got and "grad/all/saturated" not in got


def test_grad_probe_logs_no_alpha_for_norms_without_one():
    model = _probe_model("layernorm")
    with GradProbe(model) as probe:
        model(xin(2, 6)).sum().backward()
        got = probe.pop()
    assert got and not [k for k in got if k.startswith("alpha/")]


@pytest.mark.parametrize("impl", ["fused", "reference"])
def test_rmsnorm_unit_offset_is_gemmas_one_plus_w_gain(impl):
    gemma = build_norm("rmsnorm", 6, unit_offset=True, impl=impl).double()
    plain = build_norm("rmsnorm", 6, impl=impl).double()
    assert torch.equal(gemma.weight, torch.zeros(6, dtype=torch.float64))  # w starts at 0: g = 1
    with torch.no_grad():
        gemma.weight.copy_(torch.linspace(-0.5, 0.5, 6))
        plain.weight.copy_(1 + gemma.weight)
    x = xin(3, 4, 6, seed=2).requires_grad_(True)
    x2 = x.detach().clone().requires_grad_(True)
    g = torch.randn(3, 4, 6, dtype=torch.float64)
    y, y2 = gemma(x), plain(x2)
    torch.testing.assert_close(y, y2, rtol=0, atol=1e-12)
    dx, dw = torch.autograd.grad(y, [x, gemma.weight], g)
    dx2, dg = torch.autograd.grad(y2, [x2, plain.weight], g)
    torch.testing.assert_close(dx, dx2, rtol=0, atol=1e-12)
    torch.testing.assert_close(dw, dg, rtol=0, atol=1e-12)  # d/dw = d/dg: the same training
    assert build_norm("rmsnorm", 6, unit_offset=True, affine=False).weight is None
