"""A norm per site: the norm config (``norm.name``, ``norm.options``, ``norm.affine``,
``norm.sites``) turned into the factory a model builds its norms with.

A Transformer asks for each norm by its site; any other model (the MNIST CNN, the parser's MLP)
asks without one and gets the run's norm. A site's entry in ``norm.sites`` replaces the norm
there (``name``), or changes its options (``options``, on top of ``norm.options`` when the name
is the run's), so that, e.g., DyT's alpha_init differs between the FFN and attention norms::

    normlab-train task=enwik8 norm=dyt +norm.sites.ffn.options.alpha_init=1.0
    normlab-train task=iwslt14_de_en +norm.sites.final.name=rmsnorm

``norm.affine=false`` drops the gain and bias of every site's norm where the norm has them: an
``affine`` option set to false, or LayerNorm built as its affine-free member (LayerNorm-simple).
A norm without either is refused, as is a site or a key that does not exist.
"""

from __future__ import annotations

from typing import Callable, Optional

from torch import nn

from .registry import build_norm, norm_options, validate

# site -> where it is (normlab.models.transformer); the order is the docs' and the errors'
SITES = {
    "attn": "the self-attention sublayer's norm (self_attn_layer_norm)",
    "cross_attn": "the decoder's cross-attention norm (encoder_attn_layer_norm)",
    "ffn": "the FFN sublayer's norm (final_layer_norm)",
    "attn_out": "peri's norm on the self-attention output (self_attn_out_norm)",
    "cross_attn_out": "peri's norm on the cross-attention output (encoder_attn_out_norm)",
    "ffn_out": "peri's norm on the FFN output (ffn_out_norm)",
    "embed": "the embedding norm (layernorm_embedding; task.model.embed_norm)",
    "final": "the stack's last norm (layer_norm; task.model.final_norm)",
    "q": "each attention's query norm over the head dimension (q_norm; task.model.qk_norm)",
    "k": "each attention's key norm over the head dimension (k_norm; task.model.qk_norm)",
    "v": "each attention's value norm over the head dimension (v_norm; the hybrid placement)",
}
# a norm whose gain and bias are fixed by its name, and its member without them
AFFINE_FREE = {"layernorm": "layernorm_simple"}


def _affine(name: str, options: dict, affine: Optional[bool], where: str) -> tuple[str, dict]:
    if affine is None:
        return name, options
    if "affine" in norm_options(name):
        return name, {**options, "affine": affine}
    if name in AFFINE_FREE:
        return (name if affine else AFFINE_FREE[name]), options
    having = sorted(n for n in _registered() if "affine" in norm_options(n) or n in AFFINE_FREE)
    raise ValueError(
        f"norm.affine={str(affine).lower()}: {where}norm {name!r} has no gain or bias to keep or "
        f"drop; norm.affine applies to {', '.join(having)} (leave it null for the others)"
    )


def _registered() -> list[str]:
    from .registry import NORMS

    return list(NORMS)


def plan(norm: dict) -> dict:
    """{site or None: (name, options)}: what each site builds (None: a model without sites).
    Raises ValueError naming the key of anything that does not exist or fit."""
    name, options = norm["name"], dict(norm.get("options") or {})
    affine = norm.get("affine")
    if affine is not None and not isinstance(affine, bool):
        raise ValueError(f"norm.affine={affine!r}: must be true, false or null")
    sites = norm.get("sites") or {}
    unknown = sorted(set(sites) - set(SITES))
    if unknown:
        raise ValueError(f"norm.sites: unknown site(s) {unknown}; the sites are {', '.join(SITES)}")
    validate(name, **options)
    out = {None: _affine(name, options, affine, "")}
    for site in SITES:
        spec = dict(sites.get(site) or {})
        extra = sorted(set(spec) - {"name", "options"})
        if extra:
            raise ValueError(
                f"norm.sites.{site}: unknown key(s) {extra}; a site takes name and options"
            )
        n = spec.get("name") or name
        opts = {**(options if n == name else {}), **(spec.get("options") or {})}
        try:
            validate(n, **opts)
        except ValueError as e:
            raise ValueError(f"norm.sites.{site}: {e}") from None
        out[site] = _affine(n, opts, affine, f"at site {site}, ")
    return out


def site_factory(norm: dict) -> Callable[[int], nn.Module]:
    """The factory (``dim -> nn.Module``, the run's norm) of the norm config ``norm``, checked
    now; ``.at(site)`` is the factory of one site. Any plain ``dim -> module`` callable still
    works as a model's factory: :func:`at` gives it every site."""
    table = plan(norm)

    def of(site: Optional[str]) -> Callable[[int], nn.Module]:
        name, options = table[site]
        return lambda dim, **extra: build_norm(name, dim, **{**options, **extra})

    make = of(None)
    make.at = of
    make.norm_name = norm["name"]
    make.sites = {s: table[s] for s in SITES if table[s] != table[None]}
    return make


def at(factory: Callable[[int], nn.Module], site: str) -> Callable[[int], nn.Module]:
    """The factory of ``site``: the site's own where ``factory`` has sites, else ``factory``."""
    if site not in SITES:
        raise ValueError(f"unknown norm site {site!r}; the sites are {', '.join(SITES)}")
    return factory.at(site) if hasattr(factory, "at") else factory
