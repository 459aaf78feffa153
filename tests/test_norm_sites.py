"""A norm per site and norm.affine: each changes exactly the sites it names, in a real model
and through the command line, and a wrong site, key or norm is refused with the key named."""

from __future__ import annotations

import pytest
import torch

from normlab.models.seq2seq import TransformerSeq2Seq
from normlab.models.transformer import TransformerConfig
from normlab.norms import layers as L
from normlab.norms.sites import SITES, plan, site_factory

# every norm of a seq2seq model with peri, an embedding norm and the final norms, by site
SITE_OF = {
    "self_attn_layer_norm": "attn",
    "encoder_attn_layer_norm": "cross_attn",
    "final_layer_norm": "ffn",
    "self_attn_out_norm": "attn_out",
    "encoder_attn_out_norm": "cross_attn_out",
    "ffn_out_norm": "ffn_out",
    "layernorm_embedding": "embed",
    "layer_norm": "final",
    "q_norm": "q",
    "k_norm": "k",
    "v_norm": "v",
}


def model(norm: dict, placement: str = "peri") -> TransformerSeq2Seq:
    """peri reaches every site but v, which only the hybrid placement's QKV norms have."""
    cfg = TransformerConfig(
        d_model=8, heads=2, ffn_dim=16, layers=2, placement=placement, embed_norm=True, qk_norm=True
    )
    return TransformerSeq2Seq(20, 20, 0, 1, cfg, site_factory(norm))


def norms_by_site(m) -> dict[str, list]:
    out: dict[str, list] = {s: [] for s in SITES}
    for name, mod in m.named_modules():
        leaf = name.rsplit(".", 1)[-1]
        if leaf in SITE_OF:
            out[SITE_OF[leaf]].append(mod)
    return out


def test_every_site_is_reached_in_a_transformer():
    by_site = norms_by_site(model({"name": "layernorm"}))
    assert {s: len(v) for s, v in by_site.items()} == {
        "attn": 4,  # 2 encoder + 2 decoder layers
        "cross_attn": 2,
        "ffn": 4,
        "attn_out": 4,
        "cross_attn_out": 2,
        "ffn_out": 4,
        "embed": 2,  # one per stack
        "final": 2,
        "q": 6,  # every attention: 2 + 2 self, 2 cross
        "k": 6,
        "v": 0,
    }
    hybrid = {s: len(v) for s, v in norms_by_site(model({"name": "layernorm"}, "hybrid")).items()}
    # hybrid: no attention norm on the stream, a value norm in every attention
    assert hybrid["attn"] == hybrid["cross_attn"] == 0
    assert hybrid["q"] == hybrid["k"] == hybrid["v"] == 6 and hybrid["ffn"] == 4


@pytest.mark.parametrize("site", list(SITES))
def test_a_site_option_changes_that_site_only(site):
    norm = {
        "name": "dyt",
        "options": {"alpha_init": 0.5},
        "sites": {site: {"options": {"alpha_init": 2.0}}},
    }
    built = norms_by_site(model(norm, "hybrid" if site == "v" else "peri"))
    assert built[site]
    for s, mods in built.items():
        want = 2.0 if s == site else 0.5
        assert [m.alpha.item() for m in mods] == [want] * len(mods), s


def test_a_site_name_swaps_that_norm_and_takes_no_options_of_the_runs_norm():
    norm = {"name": "dyt", "options": {"alpha_init": 0.25}, "sites": {"final": {"name": "rmsnorm"}}}
    by_site = norms_by_site(model(norm))
    assert all(isinstance(m, L.RMSNorm) for m in by_site["final"])
    assert all(isinstance(m, L.DyT) for s, v in by_site.items() if s != "final" for m in v)


def test_affine_false_drops_every_gain_and_bias_where_the_norm_has_them():
    for name, cls in (("dyt", L.DyT), ("rmsnorm", L.RMSNorm)):
        with_affine = sum(p.numel() for p in model({"name": name}).parameters())
        m = model({"name": name, "affine": False})
        norms = [x for v in norms_by_site(m).values() for x in v]
        assert all(isinstance(x, cls) for x in norms)
        own = [p for x in norms for n, p in x.named_parameters() if n in ("weight", "bias")]
        assert own == []
        assert sum(p.numel() for p in m.parameters()) < with_affine
    # LayerNorm without its gain and bias is LayerNorm-simple, the same function
    m = model({"name": "layernorm", "affine": False})
    assert all(
        type(x) is L.LayerNormFamily and x.weight is None
        for v in norms_by_site(m).values()
        for x in v
    )
    x = torch.randn(2, 3, 8)
    simple = site_factory({"name": "layernorm_simple"})(8)
    torch.testing.assert_close(
        site_factory({"name": "layernorm", "affine": False})(8)(x), simple(x)
    )


def test_the_default_plan_is_the_runs_norm_at_every_site():
    p = plan({"name": "adanorm", "options": {"C": 2.0}})
    assert list(p) == [None, *SITES]
    assert all(v == ("adanorm", {"C": 2.0}) for v in p.values())
    assert site_factory({"name": "adanorm", "options": {"C": 2.0}}).sites == {}


@pytest.mark.parametrize(
    "norm,match",
    [
        (
            {"name": "layernorm", "sites": {"fnn": {}}},
            r"norm.sites: unknown site\(s\) \['fnn'\]; the sites are attn",
        ),
        (
            {"name": "layernorm", "sites": {"ffn": {"alpha": 1}}},
            r"norm.sites.ffn: unknown key\(s\) \['alpha'\]",
        ),
        (
            {"name": "dyt", "sites": {"ffn": {"options": {"alpha_init": -1}}}},
            r"norm.sites.ffn: norm.options.alpha_init=-1 is out of range",
        ),
        (
            {"name": "layernorm", "sites": {"final": {"name": "dyt", "options": {"eps": 1e-5}}}},
            r"norm.sites.final: norm 'dyt' has no option\(s\) \['eps'\]",
        ),
        (
            {"name": "adanorm", "affine": False},
            r"norm.affine=false: norm 'adanorm' has no gain or bias",
        ),
        ({"name": "layernorm", "affine": "no"}, r"norm.affine='no': must be true, false or null"),
    ],
)
def test_bad_site_configs_name_the_key(norm, match):
    with pytest.raises(ValueError, match=match):
        site_factory(norm)


def test_the_command_line_keys_reach_the_sites(tmp_path):
    from helpers import compose_cfg
    from normlab.config import load_job

    overrides = ["task=enwik8", "scale=smoke", "norm=dyt", "+norm.sites.ffn.options.alpha_init=2.0"]
    job = load_job(compose_cfg([*overrides, "norm.affine=false"], tmp_path), overrides)
    assert job.make_norm.at("ffn")(8).alpha.item() == 2.0
    assert job.make_norm.at("attn")(8).alpha.item() == 0.5  # dyt.yaml's alpha_init
    assert all(job.make_norm.at(s)(8).weight is None for s in SITES)
    assert job.setting == {"norm.affine": False, "norm.sites.ffn.options.alpha_init": 2.0}
