"""BHyT, DyISRU and SeeDNorm against the code they were matched to, written out here from its
source (repository, file and commit in each class's docstring), forward and gradients in float64;
their options, the probe's saturation share for BHyT, and a smoke sweep of the new norms and
placements on real data."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from helpers import run_cli
from normlab.files import read_json
from normlab.norms import GradProbe, build_norm, param_groups
from normlab.norms.probe import KNEE
from normlab.report import find_runs, write_report
from normlab.rundir import read_curves

D = 16


def xin(*shape, seed=0):
    g = torch.Generator().manual_seed(seed)
    # a non-zero mean, a wide spread and a few large elements, so the squashing shows
    x = torch.randn(*shape, generator=g, dtype=torch.float64) * 2.0 + 0.4
    x[..., 0] *= 8.0
    return x


def grads(out, wrt, seed=1):
    g = torch.Generator().manual_seed(seed)
    up = torch.randn(out.shape, generator=g, dtype=out.dtype)
    return torch.autograd.grad(out, wrt, up)


def assert_same(ours, theirs, x, ours_params, theirs_params):
    """Equal forward and gradients (input and every named parameter) in float64."""
    x1, x2 = x.clone().requires_grad_(True), x.clone().requires_grad_(True)
    y1, y2 = ours(x1), theirs(x2)
    torch.testing.assert_close(y1, y2, rtol=0, atol=1e-12)
    g1 = grads(y1, [x1, *ours_params])
    g2 = grads(y2, [x2, *theirs_params])
    for a, b in zip(g1, g2):
        torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-10)


# ---------------------------------------------------------------------------------------- BHyT


class OfficialBHyTStar(nn.Module):
    """MLAI-Yonsei/BHyT, models/hf_src/llama/modeling_llama.py at e170c9bd2daf, ``BHyT_Star``,
    as written there but for one change: the mean of x^2 in the input's dtype (the file asks for
    float32), so that a float64 input is float64 throughout."""

    def __init__(self, hidden_size, eps=1e-6, lam_init=2.0, learnable_lam=False, inv_kappa=0.1):
        super().__init__()
        self.eps = eps
        self.inv_kappa = inv_kappa
        if learnable_lam:
            self.lam = nn.Parameter(torch.empty(1))
            self.lam.data.fill_(lam_init)
        else:
            self.lam = nn.Parameter(torch.tensor(lam_init, requires_grad=False))
        self.weight = nn.Parameter(torch.ones(hidden_size))

    def forward(self, hidden_states):
        var_x = (hidden_states * hidden_states).mean(dim=-1, keepdim=True)
        alpha = self.lam * torch.rsqrt(var_x + self.eps) * self.inv_kappa
        tanh_out = torch.tanh(alpha * hidden_states)
        return self.weight * tanh_out.to(dtype=hidden_states.dtype)


@pytest.mark.parametrize("learn", [False, True])
@pytest.mark.parametrize("lam,inv_kappa", [(2.0, 0.1), (3.0, 0.5)])
def test_bhyt_equals_the_official_bhyt_star(learn, lam, inv_kappa):
    ours = build_norm("bhyt", D, lam=lam, inv_kappa=inv_kappa, learn_lam=learn).double()
    theirs = OfficialBHyTStar(D, lam_init=lam, learnable_lam=learn, inv_kappa=inv_kappa).double()
    with torch.no_grad():
        gain = 1.0 + 0.3 * torch.randn(D, dtype=torch.float64)
        ours.weight.copy_(gain)
        theirs.weight.copy_(gain)
    ours_p = [ours.weight, *([ours.lam] if learn else [])]
    theirs_p = [theirs.weight, *([theirs.lam] if learn else [])]
    assert_same(ours, theirs, xin(3, 5, D), ours_p, theirs_p)


def test_bhyt_lambda_is_fixed_unless_learned_and_has_no_bias():
    fixed = build_norm("bhyt", D)
    assert [n for n, _ in fixed.named_parameters()] == ["weight"]  # no bias, lambda a buffer
    assert "lam" in fixed.state_dict() and fixed.lam.item() == 2.0
    learned = build_norm("bhyt", D, learn_lam=True)
    assert sorted(n for n, _ in learned.named_parameters()) == ["lam", "weight"]
    # at init: tanh(0.2 x / RMS(x)), nearly RMSNorm's 0.2 x / RMS(x) for unit-RMS rows
    x = torch.randn(4, D)
    rms = x.pow(2).mean(-1, keepdim=True).add(1e-6).sqrt()
    torch.testing.assert_close(fixed(x), torch.tanh(0.2 * x / rms))
    with pytest.raises(ValueError, match=r"norm.options.inv_kappa=0 is out of range"):
        build_norm("bhyt", D, inv_kappa=0)


def test_the_probe_records_bhyts_lambda_and_the_share_of_its_tanh_past_the_knee():
    torch.manual_seed(0)
    lin = nn.Linear(D, D).double()
    norm = build_norm("bhyt", D, lam=20.0, learn_lam=True).double()  # lambda / kappa = 2
    model = nn.Sequential(lin, norm)
    with GradProbe(model) as probe:
        h = lin(xin(6, D))
        rms = h.detach().pow(2).mean(-1, keepdim=True).add(1e-6).sqrt()
        share = ((2.0 * h.detach() / rms).abs() > KNEE).double().mean().item()
        norm(h).sum().backward()
        got = probe.pop()
    assert 0.0 < share < 1.0
    assert got["alpha/1/alpha"] == pytest.approx(20.0)
    assert got["alpha/1/saturated"] == pytest.approx(share, rel=1e-12)


# -------------------------------------------------------------------------------------- DyISRU


class OfficialDyISRU(nn.Module):
    """abcde17/dynamic-activation-functions, nanoGPT/dyaf.py at deca29dbd5cd: ``DyISRU`` and, with
    ``softplus``, ``DyISRUsp`` (the same but softplus(beta)), as written there."""

    def __init__(self, ndim, bias=True, epsilon=1e-5, init_beta=100, softplus=False):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(ndim))
        self.bias = nn.Parameter(torch.zeros(ndim)) if bias else None
        self.epsilon = epsilon
        self.beta = nn.Parameter(torch.ones(1) * init_beta)
        self.softplus = softplus

    def forward(self, x):
        beta = F.softplus(self.beta) if self.softplus else self.beta
        x = x / torch.sqrt(beta + x**2 + self.epsilon)
        x = x * self.weight
        if self.bias is not None:
            x = x + self.bias
        return x


@pytest.mark.parametrize("softplus", [False, True])
def test_dyisru_equals_the_papers_code(softplus):
    ours = build_norm("dyisru", D, beta_init=4.0, softplus=softplus).double()
    theirs = OfficialDyISRU(D, init_beta=0.0, softplus=softplus).double()
    with torch.no_grad():
        theirs.beta.copy_(ours.beta)  # the parameter itself (softplus^-1(4) in the softplus form)
        for p in ("weight", "bias"):
            v = 1.0 + 0.3 * torch.randn(D, dtype=torch.float64)
            getattr(ours, p).copy_(v)
            getattr(theirs, p).copy_(v)
    params = ("beta", "weight", "bias")
    assert_same(
        ours,
        theirs,
        xin(3, 5, D),
        [getattr(ours, p) for p in params],
        [getattr(theirs, p) for p in params],
    )


def test_dyisru_starts_at_beta_init_in_both_forms_and_sqrt_dim_is_the_papers_formula():
    for softplus in (False, True):
        m = build_norm("dyisru", D, beta_init=4.0, softplus=softplus)
        assert m.effective_beta.item() == pytest.approx(4.0, rel=1e-6)
    x = xin(2, D)
    plain = build_norm("dyisru", D, affine=False).double()
    paper = build_norm("dyisru", D, affine=False, sqrt_dim=True).double()
    # the paper: sqrt(C) x / sqrt(beta + x^2), C the features
    want = math.sqrt(D) * x / torch.sqrt(4.0 + x * x + 1e-5)
    torch.testing.assert_close(paper(x), want, rtol=0, atol=1e-12)
    torch.testing.assert_close(plain(x), want / math.sqrt(D), rtol=0, atol=1e-12)
    assert [n for n, _ in plain.named_parameters()] == ["beta"]


# ------------------------------------------------------------------------------------ SeeDNorm


class ThirdPartySeeDNorm(nn.Module):
    """AllenHaoHuang/Megatron-LM, megatron/core/transformer/torch_norm.py at 2c535e5f75aa, the
    multi-head SeeDNorm, as written there (no official code was found)."""

    def __init__(self, hidden_size, eps, num_heads=1):
        super().__init__()
        self.eps, self.num_heads, self.head_dim = eps, num_heads, hidden_size // num_heads
        self.gamma = nn.Parameter(torch.ones(hidden_size))
        self.alpha = nn.Parameter(torch.ones(hidden_size))
        self.beta = nn.Parameter(torch.zeros(hidden_size))

    def forward(self, x):
        x_normed = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        beta = self.beta
        if self.num_heads == 1:
            seed = (x * beta).sum(-1, keepdim=True)
            scale = torch.tanh(seed)
        else:
            lead = x.shape[:-1]
            x_heads = x.reshape(*lead, self.num_heads, self.head_dim)
            beta_heads = beta.reshape(self.num_heads, self.head_dim)
            seed = (x_heads * beta_heads).sum(-1)
            scale = torch.tanh(seed).repeat_interleave(self.head_dim, dim=-1)
        gain = self.gamma + self.alpha * scale
        return gain * x_normed


@pytest.mark.parametrize("heads", [1, 4])
def test_seednorm_equals_a_third_party_implementation_of_the_paper(heads):
    ours = build_norm("seednorm", D, heads=heads).double()
    theirs = ThirdPartySeeDNorm(D, eps=1e-6, num_heads=heads).double()
    g = torch.Generator().manual_seed(3)
    with torch.no_grad():  # beta away from 0, so the dynamic part and its gradients show
        for a, b in (("weight", "gamma"), ("alpha", "alpha"), ("beta", "beta")):
            v = 0.2 * torch.randn(D, generator=g, dtype=torch.float64) + (a != "beta")
            getattr(ours, a).copy_(v)
            getattr(theirs, b).copy_(v)
    assert_same(
        ours,
        theirs,
        xin(3, 5, D),
        [ours.weight, ours.alpha, ours.beta],
        [theirs.gamma, theirs.alpha, theirs.beta],
    )


def test_seednorm_starts_as_rmsnorm_and_decays_alpha_and_beta():
    x = xin(3, D)
    seed = build_norm("seednorm", D).double()
    rms = build_norm("rmsnorm", D, eps=1e-6, impl="reference").double()
    torch.testing.assert_close(seed(x), rms(x), rtol=0, atol=1e-12)
    assert seed.alpha.eq(1).all() and seed.beta.eq(0).all() and seed.weight.eq(1).all()
    groups = param_groups(seed, weight_decay=0.1)
    decayed = {id(p) for g in groups if g["weight_decay"] for p in g["params"]}
    assert decayed == {id(seed.alpha), id(seed.beta)}
    with pytest.raises(
        ValueError, match="norm.options.heads=3 must be a whole number that divides"
    ):
        build_norm("seednorm", D, heads=3)


# ------------------------------------------------------------------------- on real data, trained


NEW_NORMS, NEW_PLACEMENTS = ("bhyt", "dyisru", "seednorm"), ("pre", "reorder", "hybrid")


def test_a_sweep_of_the_new_norms_and_placements_trains_on_real_data(tmp_path, data_dir):
    args = ["task=enwik8", "scale=smoke", "threads=1", "task.train.probe_every=2"]
    args += [f"norm={','.join(NEW_NORMS)}", f"task.model.placement={','.join(NEW_PLACEMENTS)}"]
    run_cli([*args, "--multirun"], tmp_path, data_dir)
    root = tmp_path / "runs" / "smoke" / "default" / "enwik8"
    params = {}
    for norm in NEW_NORMS:
        for p in NEW_PLACEMENTS:
            run_dir = root / norm / f"placement={p},probe_every=2" / "seed1"
            summary = read_json(run_dir / "summary.json")
            assert summary["status"] == "completed", (norm, p)
            assert math.isfinite(summary["best_valid"]["loss"]), (norm, p)
            params[norm, p] = summary["params"]
            train = [r for r in read_curves(run_dir / "curves.jsonl") if r.get("split") == "train"]
            # BHyT's lambda and saturation share in the probe's records, as DyT's; not the others'
            probed = [r for r in train if "alpha/all/saturated" in r]
            assert bool(probed) == (norm == "bhyt"), (norm, p)
            for r in probed:
                assert r["alpha/all/alpha"] == 2.0 and 0.0 <= r["alpha/all/saturated"] <= 1.0
    # per-head query, key and value norms in hybrid, in place of the attention norms
    assert all(params[n, "pre"] == params[n, "reorder"] != params[n, "hybrid"] for n in NEW_NORMS)
    # the report's alpha/saturation table has BHyT's lambda, and no row for the others
    written = write_report(find_runs([tmp_path / "runs"]), tmp_path / "report", figures=False)
    table = tmp_path / "report" / "alpha_saturation.md"
    assert table in written["tables"]
    text = table.read_text()
    assert "| BHyT | 2 → 2 | 0.0% → 0.0% | 1 |" in text, text
    assert "2 → 2" in text and "DyISRU" not in text and "SeeDNorm" not in text


def test_bhyts_saturation_share_is_taken_over_the_channels_of_a_channels_first_input():
    norm = build_norm("bhyt", 4, lam=30.0, channels_first=True).double()
    model = nn.Sequential(nn.Conv2d(2, 4, 3).double(), norm)
    with GradProbe(model) as probe:
        h = model[0](xin(3, 2, 6, 6))
        c = h.detach().movedim(1, -1)  # the RMS of each pixel over its 4 channels
        u = 3.0 * c / c.pow(2).mean(-1, keepdim=True).add(1e-6).sqrt()
        norm(h).sum().backward()
        got = probe.pop()
    assert 0.0 < got["alpha/1/saturated"] < 1.0
    assert got["alpha/1/saturated"] == pytest.approx((u.abs() > KNEE).double().mean().item())
