"""Where the norms sit in a Transformer layer, and what each placement scales.

Each sublayer F (self-attention, cross-attention, FFN) of layer l (1-based, in its stack) is
wired by one rule; N is the sublayer's norm, N2 its output norm (peri only), D dropout:

- ``post`` (Vaswani et al. 2017; fairseq without ``normalize_before``): x <- N(x + D(F(x)))
- ``pre`` (fairseq ``normalize_before``): x <- x + D(F(N(x))); with ``layernorm_scaling``
  (Sun et al. 2025, lmsdss/LayerNorm-Scaling "LNS") x <- x + D(F(N(x) / sqrt(l)))
- ``peri`` (Peri-LN, Kim et al. 2025; Sandwich-LN, Ding et al. 2021): x <- x + D(N2(F(N(x))))
- ``mixln`` (Li et al. 2024, Mix-LN): post in the first k layers of each stack, pre after
- ``deepnorm`` (Wang et al. 2022, microsoft/torchscale): x <- N(alpha * x + D(F(x))), and at
  initialization the weights and biases of fc1, fc2, v_proj and out_proj multiplied by beta
- ``reorder`` (OLMo 2, allenai/OLMo-core's ReorderedNormTransformerBlock): x <- x + D(N(F(x))),
  the norm on the sublayer's output and none on its input
- ``hybrid`` (HybridNorm, Zhuo et al. 2025, BryceZhuo/HybridNorm): attention normalizes its
  queries, keys and values (each head by norms of its own, sites q, k, v) and the stream around it
  is left alone, x <- x + D(A(x)); the FFN's norm is on the stream and its output is the
  residual's trunk, h <- N(x), x <- h + D(F(h)). With ``hybrid_first_pre`` (HybridNorm*) each
  stack's first layer is pre-norm, QKV norms kept

alpha and beta are torchscale's code (N encoder, M decoder layers): the encoder of an
encoder-decoder alpha = 0.81 (N^4 M)^(1/16), beta = 1.15 (N^4 M)^(-1/16) (the code divides by
(N^4 M)^(1/16) / 1.15; the paper's table prints 0.87, its inverse); its decoder alpha = (3M)^(1/4),
beta = (12M)^(-1/4); a stack on its own (LM, classifier) alpha = (2L)^(1/4), beta = (8L)^(-1/4).

The stack's last norm (``final_norm``) is on where the last sublayer leaves x unnormalized (pre,
peri, mixln, reorder, hybrid) and off where it already ends in a norm (post, deepnorm); a norm on the embedding
output (``embed_norm``, fairseq's ``layernorm_embedding``) is off in every placement. Both can be
set either way.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

PLACEMENTS = ("post", "pre", "peri", "mixln", "deepnorm", "reorder", "hybrid")
# the parameters DeepNorm scales down at initialization, by name, as torchscale matches them
DEEPNORM_SCALED = ("fc1", "fc2", "v_proj", "out_proj")


def problem(m) -> Optional[tuple[str, object, str, tuple[str, ...]]]:
    """What is wrong with a model config's placement keys (an object or a dict with placement,
    normalize_before, layernorm_scaling, layers, mixln_post_layers, hybrid_first_pre): (key,
    value, what it must be, the keys it depends on), or None."""
    get = m.get if isinstance(m, dict) else lambda k, d=None: getattr(m, k, d)
    p = get("placement")
    if p is not None and p not in PLACEMENTS:
        return (
            "placement",
            p,
            f"must be one of {list(PLACEMENTS)} (or null: pre when normalize_before, else post)",
            (),
        )
    p = p or ("pre" if get("normalize_before", True) else "post")
    if get("layernorm_scaling") and p != "pre":
        return (
            "layernorm_scaling",
            True,
            f"scales the pre-norm output, so it needs the pre placement, not {p}",
            ("placement",),
        )
    if get("hybrid_first_pre") and p != "hybrid":
        return (
            "hybrid_first_pre",
            True,
            f"makes HybridNorm's first layer pre-norm, so it needs the hybrid placement, not {p}",
            ("placement",),
        )
    k, n = get("mixln_post_layers"), get("layers")
    if p == "mixln" and k is not None and isinstance(n, int) and not 0 <= k <= n:
        return ("mixln_post_layers", k, f"must be between 0 and the layers ({n})", ("layers",))
    return None


def resolve(cfg) -> str:
    """The placement a TransformerConfig means: ``placement`` when set, else fairseq's switch;
    raises ValueError naming the key of a value that does not fit."""
    bad = problem(cfg)
    if bad:
        key, value, want, _ = bad
        shown = "true" if value is True else repr(value)
        raise ValueError(f"model.{key}={shown}: {want}")
    return cfg.placement or ("pre" if cfg.normalize_before else "post")


@dataclass(frozen=True)
class Wiring:
    """How one layer's sublayers meet the residual stream."""

    mode: str  # post | pre | peri | deepnorm | reorder | hybrid
    alpha: float = 1.0  # the residual's weight (deepnorm)
    scale: float = 1.0  # times the pre-norm output (layernorm scaling)
    qkv: bool = False  # attention normalizes its queries, keys and values (hybrid)

    def rule(self, sublayer: str) -> str:
        """How one sublayer ("attn": self- or cross-attention, "ffn") meets the stream: the mode,
        except in hybrid, where attention is "inner" (its norms inside, x + D(A(x))) and the FFN
        "trunk" (h = N(x); h + D(F(h)))."""
        if self.mode == "hybrid":
            return "inner" if sublayer == "attn" else "trunk"
        return self.mode


def mixln_post_layers(layers: int, k: Optional[int]) -> int:
    """Mix-LN's k: layers given, else a quarter of the stack (Li et al.'s alpha = 0.25), at least
    one, so that a shallow stack still has a post-norm layer."""
    if k is None:
        return min(layers, max(1, layers // 4))
    if not 0 <= k <= layers:
        raise ValueError(
            f"model.mixln_post_layers={k}: must be between 0 and the layers ({layers})"
        )
    return k


def deepnorm_constants(role: str, layers: int, other: int = 0) -> tuple[float, float]:
    """(alpha, beta) of a stack of ``layers`` layers. role: "encoder" or "decoder" of an
    encoder-decoder whose other stack has ``other`` layers, or "stack" (LM, classifier)."""
    if role == "encoder":
        n4m = layers**4 * other
        return 0.81 * n4m**0.0625, 1.15 * n4m**-0.0625
    if role == "decoder":
        return (3.0 * layers) ** 0.25, (12.0 * layers) ** -0.25
    return (2.0 * layers) ** 0.25, (8.0 * layers) ** -0.25


def wirings(cfg, role: str = "stack", other: int = 0) -> list[Wiring]:
    """One Wiring per layer of a stack built from ``cfg`` (a TransformerConfig)."""
    p, n = cfg.placement, cfg.layers
    if p == "mixln":
        k = mixln_post_layers(n, cfg.mixln_post_layers)
        return [Wiring("post" if i < k else "pre") for i in range(n)]
    if p == "deepnorm":
        alpha, _ = deepnorm_constants(role, n, other)
        return [Wiring("deepnorm", alpha=alpha) for _ in range(n)]
    if p == "pre" and cfg.layernorm_scaling:
        return [Wiring("pre", scale=1.0 / math.sqrt(i + 1)) for i in range(n)]
    if p == "hybrid":
        first = "pre" if cfg.hybrid_first_pre else "hybrid"
        return [Wiring(first if i == 0 else "hybrid", qkv=True) for i in range(n)]
    return [Wiring(p) for _ in range(n)]


def has_final_norm(cfg) -> bool:
    if cfg.final_norm is not None:
        return bool(cfg.final_norm)
    return cfg.placement in ("pre", "peri", "mixln", "reorder", "hybrid")


def deepnorm_init(stack, beta: float) -> None:
    """DeepNorm's initialization: the value and output projections and both FFN matrices (their
    biases too) of every layer multiplied by beta, after the usual init, as torchscale does."""
    for name, p in stack.named_parameters():
        if any(part in DEEPNORM_SCALED for part in name.split(".")):
            p.data.mul_(beta)
