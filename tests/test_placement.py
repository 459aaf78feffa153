"""Placements: each stack against the definition written out here from its reference code
(fairseq's normalize_before, Peri/Sandwich-LN, Mix-LN and LayerNorm scaling as in
lmsdss/LayerNorm-Scaling's modeling_llama.py, DeepNorm as in microsoft/torchscale), forward and
gradients in float64; DeepNorm's constants and init; the embedding and final norm switches."""

from __future__ import annotations

import math
import os
import subprocess
import sys

import pytest
import torch
import torch.nn.functional as F

from helpers import REPO, TEST_CACHE
from normlab.files import read_json
from normlab.models import placement as place
from normlab.models.lm import TransformerLM
from normlab.models.seq2seq import TransformerSeq2Seq
from normlab.models.transformer import TransformerConfig, TransformerEncoder
from normlab.norms import norm_factory

D, H, L = 8, 2, 4


def cfg(**kw) -> TransformerConfig:
    base = dict(d_model=D, heads=H, ffn_dim=16, layers=L, dropout=0.0)
    return TransformerConfig(**{**base, **kw})


def ln(m, x):  # the reference LayerNorm, from the module's own parameters
    return F.layer_norm(x, (D,), m.weight, m.bias, m.eps)


def stack(c: TransformerConfig, seed=0) -> TransformerEncoder:
    torch.manual_seed(seed)
    s = TransformerEncoder(c, norm_factory("layernorm", impl="reference")).double()
    with torch.no_grad():  # gains and biases away from 1 and 0, so a swapped norm shows
        for name, p in s.named_parameters():
            if "norm" in name:
                p.add_(0.3 * torch.randn_like(p))
    return s


def attend(a, h, memory=None, causal=False):
    """Attention written out, queries from ``h``, keys and values from ``memory`` (self-attention
    without it), each head through the module's per-head norms where it has them (QK-norm,
    HybridNorm's QKV norm); ``causal``: query i sees keys <= i."""
    memory = h if memory is None else memory
    dh = D // H

    def heads(t, norm):
        t = t.view(t.shape[0], t.shape[1], H, dh).transpose(1, 2)
        return t if norm is None else F.layer_norm(t, (dh,), norm.weight, norm.bias, norm.eps)

    q = heads(a.q_proj(h), a.q_norm)
    k, v = heads(a.k_proj(memory), a.k_norm), heads(a.v_proj(memory), a.v_norm)
    scores = q @ k.transpose(-1, -2) / math.sqrt(dh)
    if causal:
        seen = torch.ones(scores.shape[-2:], dtype=torch.bool).tril()
        scores = scores.masked_fill(~seen, float("-inf"))
    out = torch.softmax(scores, -1) @ v
    return a.out_proj(out.transpose(1, 2).reshape(h.shape[0], h.shape[1], D))


def reference(s: TransformerEncoder, x, rule, alpha=1.0, scales=None, post_layers=0, pre_layers=0):
    """The stack by its definition; every layer's two sublayers (attention, FFN) by ``rule``."""
    for i, layer in enumerate(s.layers):
        subs = [
            (
                layer.self_attn_layer_norm,
                layer.self_attn_out_norm,
                lambda h, a=layer.self_attn: attend(a, h),
            ),
            (
                layer.final_layer_norm,
                layer.ffn_out_norm,
                lambda h, m=layer: m.fc2(F.relu(m.fc1(h))),
            ),
        ]
        r = ("post" if i < post_layers else "pre") if rule == "mixln" else rule
        r = "pre" if i < pre_layers else r
        for j, (n1, n2, f) in enumerate(subs):
            if r == "post":  # x <- N(x + F(x))
                x = ln(n1, x + f(x))
            elif r == "pre":  # x <- x + F(N(x) * s_l)
                x = x + f(ln(n1, x) * (scales[i] if scales else 1.0))
            elif r == "peri":  # x <- x + N2(F(N1(x)))
                x = x + ln(n2, f(ln(n1, x)))
            elif r == "deepnorm":  # x <- N(alpha x + F(x))
                x = ln(n1, alpha * x + f(x))
            elif r == "reorder":  # OLMo-core's ReorderedNormTransformerBlock: x <- x + N(F(x))
                x = x + ln(n1, f(x))
            elif r == "hybrid" and j == 0:  # QKV norms inside attention, none on the stream
                assert n1 is None
                x = x + f(x)
            elif r == "hybrid":  # the FFN's norm on the stream, its output the trunk
                h = ln(n1, x)
                x = h + f(h)
    return ln(s.layer_norm, x) if s.layer_norm is not None else x


CASES = {
    "post": (dict(placement="post"), dict(rule="post")),
    "pre": (dict(placement="pre"), dict(rule="pre")),
    "pre+scaling": (
        dict(placement="pre", layernorm_scaling=True),
        dict(rule="pre", scales=[1 / math.sqrt(i + 1) for i in range(L)]),
    ),
    "peri": (dict(placement="peri"), dict(rule="peri")),
    "mixln": (dict(placement="mixln"), dict(rule="mixln", post_layers=1)),  # L // 4
    "mixln k=3": (dict(placement="mixln", mixln_post_layers=3), dict(rule="mixln", post_layers=3)),
    "deepnorm": (dict(placement="deepnorm"), dict(rule="deepnorm", alpha=(2 * L) ** 0.25)),
    "reorder": (dict(placement="reorder"), dict(rule="reorder")),
    "hybrid": (dict(placement="hybrid"), dict(rule="hybrid")),
    "hybrid*": (dict(placement="hybrid", hybrid_first_pre=True), dict(rule="hybrid", pre_layers=1)),
}


@pytest.mark.parametrize("case", list(CASES))
def test_each_placement_equals_its_definition_forward_and_backward(case):
    kw, ref = CASES[case]
    s = stack(cfg(**kw))
    x = torch.randn(3, 5, D, dtype=torch.float64, requires_grad=True)
    out = s(x)
    x2 = x.detach().clone().requires_grad_(True)
    want = reference(s, x2, **ref)
    torch.testing.assert_close(out, want, rtol=0, atol=1e-12)
    g = torch.randn_like(out)
    params = [p for p in s.parameters()]
    got = torch.autograd.grad(out, [x, *params], g, allow_unused=True)
    exp = torch.autograd.grad(want, [x2, *params], g, allow_unused=True)
    for a, b in zip(got, exp):
        assert (a is None) == (b is None)
        if a is not None:
            torch.testing.assert_close(a, b, rtol=0, atol=1e-10)


def test_the_placements_differ_from_each_other():
    # the reference could agree with a wiring that ignores the placement: it must not
    x = torch.randn(2, 5, D, dtype=torch.float64)
    outs = {c: stack(cfg(**CASES[c][0]))(x) for c in CASES}
    names = list(outs)
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            assert not torch.allclose(outs[a], outs[b]), (a, b)


def norm_names(model) -> set[str]:
    return {n for n, m in model.named_modules() if type(m).__name__.endswith(("Norm", "Family"))}


def test_norm_sites_per_placement_and_the_switches():
    counts = {p: len(norm_names(stack(cfg(placement=p)))) for p in place.PLACEMENTS}
    # two sublayers a layer, one norm each; peri two each; the final norm where x is left raw
    assert counts == {
        "post": 2 * L,
        "pre": 2 * L + 1,
        "peri": 4 * L + 1,
        "mixln": 2 * L + 1,
        "deepnorm": 2 * L,
        # the sublayers' output norms and the final norm
        "reorder": 2 * L + 1,
        # per layer the attention's query, key and value norms and the FFN's; the final norm
        "hybrid": 4 * L + 1,
    }
    # HybridNorm*: the first layer's attention norm on the stream too
    assert len(norm_names(stack(cfg(placement="hybrid", hybrid_first_pre=True)))) == 4 * L + 2
    s = stack(cfg(placement="post", final_norm=True, embed_norm=True))
    assert {"layer_norm", "layernorm_embedding"} <= norm_names(s)
    assert "layer_norm" not in norm_names(stack(cfg(placement="pre", final_norm=False)))
    # placement unset: fairseq's switch, as every committed run was trained
    assert cfg(normalize_before=False).placement == "post"
    assert cfg(normalize_before=True).placement == "pre"


def test_embedding_norm_sits_between_the_embedding_sum_and_dropout():
    torch.manual_seed(0)
    c = cfg(placement="pre", embed_norm=True, layers=1)
    lm = TransformerLM(12, c, norm_factory("layernorm", impl="reference")).double().eval()
    tokens = torch.randint(0, 12, (2, 6))
    e = lm.embed
    raw = e.embed(tokens) * e.scale + e.positions[:6]
    body = lm.decoder.layernorm_embedding
    with torch.no_grad():
        body.weight.mul_(3.0)
    want = lm.decoder(ln(body, raw), causal=True)
    got_h = lm.decoder(lm.embed(tokens, norm=body), causal=True)
    torch.testing.assert_close(got_h, want)
    logits = lm(tokens)
    torch.testing.assert_close(logits, F.linear(want, e.weight[:12], lm.out_bias))


def test_bad_values_name_the_key():
    with pytest.raises(ValueError, match="model.placement='sandwich'"):
        cfg(placement="sandwich")
    with pytest.raises(
        ValueError, match="layernorm_scaling=true: .* needs the pre placement, not post"
    ):
        cfg(placement="post", layernorm_scaling=True)
    with pytest.raises(
        ValueError, match="model.mixln_post_layers=5: must be between 0 and the layers"
    ):
        cfg(placement="mixln", mixln_post_layers=5)
    with pytest.raises(ValueError, match="hybrid_first_pre=true: .* needs the hybrid placement"):
        cfg(placement="pre", hybrid_first_pre=True)


def test_deepnorm_constants_are_torchscales():
    n, m = 6, 6
    enc_a, enc_b = place.deepnorm_constants("encoder", n, m)
    assert enc_a == pytest.approx(0.81 * (n**4 * m) ** (1 / 16))
    assert enc_b == pytest.approx(1 / ((n**4 * m) ** (1 / 16) / 1.15))  # torchscale divides by this
    assert place.deepnorm_constants("decoder", m, n) == pytest.approx(
        ((3 * m) ** 0.25, 1 / (12 * m) ** 0.25)
    )
    assert place.deepnorm_constants("stack", 12) == pytest.approx((24**0.25, 1 / 96**0.25))


def test_deepnorm_scales_exactly_the_value_output_and_ffn_parameters_at_init():
    norm = norm_factory("layernorm")
    torch.manual_seed(3)
    post = TransformerSeq2Seq(20, 20, 0, 1, cfg(placement="post"), norm, decoder_layers=2)
    torch.manual_seed(3)
    deep = TransformerSeq2Seq(20, 20, 0, 1, cfg(placement="deepnorm"), norm, decoder_layers=2)
    beta = {
        "encoder": place.deepnorm_constants("encoder", L, 2)[1],
        "decoder": place.deepnorm_constants("decoder", 2, L)[1],
    }
    p0 = dict(post.named_parameters())
    scaled = 0
    for name, p in deep.named_parameters():
        parts = name.split(".")
        if parts[0] in beta and set(parts) & {"fc1", "fc2", "v_proj", "out_proj"}:
            torch.testing.assert_close(p, p0[name] * beta[parts[0]], rtol=0, atol=0)
            scaled += 1
        else:
            torch.testing.assert_close(p, p0[name], rtol=0, atol=0)
    # per layer: fc1, fc2 and each attention's v_proj, out_proj, weight and bias
    assert scaled == L * (4 + 4) + 2 * (4 + 8)
    # alpha: encoder and decoder layers carry their own
    assert deep.encoder.layers[0].wiring.alpha == pytest.approx(
        place.deepnorm_constants("encoder", L, 2)[0]
    )
    assert deep.decoder.layers[0].wiring.alpha == pytest.approx((3 * 2) ** 0.25)


@pytest.mark.parametrize(
    "p,qk",
    [*((p, False) for p in place.PLACEMENTS), ("pre", True), ("hybrid", True)],
    ids=[*place.PLACEMENTS, "pre+qk_norm", "hybrid*"],
)
def test_incremental_decoding_equals_the_full_forward_in_every_placement(p, qk):
    torch.manual_seed(0)
    extra = dict(hybrid_first_pre=True) if p == "hybrid" and qk else dict(qk_norm=qk)
    c = cfg(placement=p, layers=2, embed_norm=True, **extra)
    m = TransformerSeq2Seq(20, 20, 0, 1, c, norm_factory("layernorm")).double().eval()
    src = torch.randint(2, 20, (2, 5))
    prev = torch.cat([torch.ones(2, 1, dtype=torch.long), torch.randint(2, 20, (2, 3))], 1)
    full = F.log_softmax(m(src, prev), -1)
    state = m.start(src)
    steps = [m.step(prev[:, t], state) for t in range(prev.shape[1])]
    # step() returns float32 log-probabilities
    torch.testing.assert_close(torch.stack(steps, 1), full.float(), rtol=0, atol=1e-5)


@pytest.mark.parametrize("task", ["iwslt14_de_en", "enwik8"])
def test_a_placement_sweep_runs_on_real_data_at_smoke_scale(task, tmp_path, data_dir):
    placements = ",".join(place.PLACEMENTS)
    env = {**os.environ, "NORMLAB_CACHE": str(TEST_CACHE), "NORMLAB_DATA": str(data_dir)}
    cmd = [sys.executable, "-m", "normlab.train", "--multirun", f"task={task}", "scale=smoke"]
    cmd += [f"task.model.placement={placements}", "threads=1", "progress=false"]
    cmd += [f"paths.root={tmp_path / 'runs'}"]
    out = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    runs = tmp_path / "runs" / "smoke" / "default" / task / "layernorm"
    s = {p: read_json(runs / f"placement={p}" / "seed1" / "summary.json") for p in place.PLACEMENTS}
    assert {p: x["status"] for p, x in s.items()} == dict.fromkeys(place.PLACEMENTS, "completed")
    assert {p: x["setting"] for p, x in s.items()} == {p: {"placement": p} for p in s}
    n = {p: x["params"] for p, x in s.items()}
    # final norms where the stream is left raw; peri's output norms on top
    assert n["post"] == n["deepnorm"] < n["pre"] == n["mixln"] == n["reorder"] < n["peri"]
    # hybrid: per-head query, key and value norms in place of the attention norms
    assert n["hybrid"] != n["pre"]
    assert len({round(x["best_valid"]["loss"], 6) for x in s.values()}) == len(s)  # all differ


def test_qk_norm_normalizes_each_heads_queries_and_keys_by_norms_of_their_own():
    from normlab.models.transformer import MultiheadAttention

    torch.manual_seed(0)
    attn = MultiheadAttention(D, H, qk_norm=norm_factory("layernorm", impl="reference")).double()
    with torch.no_grad():
        attn.q_norm.weight.uniform_(0.5, 1.5)
        attn.k_norm.bias.uniform_(-0.2, 0.2)
    assert attn.q_norm is not attn.k_norm
    x = torch.randn(2, 5, D, dtype=torch.float64)
    dh = D // H

    def heads(t):
        return t.view(2, 5, H, dh).transpose(1, 2)

    q = F.layer_norm(heads(attn.q_proj(x)), (dh,), attn.q_norm.weight, attn.q_norm.bias, 1e-5)
    k = F.layer_norm(heads(attn.k_proj(x)), (dh,), attn.k_norm.weight, attn.k_norm.bias, 1e-5)
    w = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(dh), -1)
    want = attn.out_proj((w @ heads(attn.v_proj(x))).transpose(1, 2).reshape(2, 5, D))
    torch.testing.assert_close(attn(x, x, x), want, rtol=0, atol=1e-12)


@pytest.mark.parametrize("p", ["reorder", "hybrid"])
def test_a_decoder_layer_equals_its_definition_in_the_new_placements(p):
    torch.manual_seed(0)
    m = TransformerSeq2Seq(20, 20, 0, 1, cfg(placement=p, layers=1), norm_factory("layernorm"))
    m = m.double()
    with torch.no_grad():
        for name, q in m.named_parameters():
            if "norm" in name:
                q.add_(0.3 * torch.randn_like(q))
    layer = m.decoder.layers[0]
    x, memory = torch.randn(2, 4, D, dtype=torch.float64), torch.randn(2, 5, D, dtype=torch.float64)

    def self_attn(h):
        return attend(layer.self_attn, h, causal=True)

    def ffn(h):
        return layer.fc2(F.relu(layer.fc1(h)))

    if p == "reorder":  # x + N(F(x)) for each of the three sublayers
        y = x + ln(layer.self_attn_layer_norm, self_attn(x))
        y = y + ln(layer.encoder_attn_layer_norm, attend(layer.encoder_attn, y, memory))
        want = y + ln(layer.final_layer_norm, ffn(y))
    else:  # both attentions with QKV norms and no norm on the stream; the FFN's norm the trunk
        assert layer.self_attn_layer_norm is None and layer.encoder_attn_layer_norm is None
        y = x + self_attn(x)
        y = y + attend(layer.encoder_attn, y, memory)
        h = ln(layer.final_layer_norm, y)
        want = h + ffn(h)
    torch.testing.assert_close(layer(x, memory), want, rtol=0, atol=1e-12)
