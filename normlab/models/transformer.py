"""The one Transformer of normlab: attention, encoder/decoder layers and stacks.

Every norm position is built by a ``norm`` factory (``dim -> nn.Module``, see
``normlab.norms.norm_factory``), asked for by its site (``normlab.norms.sites``: attn,
cross_attn, ffn, their peri output norms, embed, final), so a run can put a different norm or
option at one site; nothing here names a norm class. Where the norms sit is
``placement`` (post, pre, peri, mixln, deepnorm, reorder, hybrid; ``normlab.models.placement``
defines each): with
``placement`` unset, fairseq's ``normalize_before`` decides between post-norm x <- N(x + F(x)) and
pre-norm x <- x + F(N(x)). Module names follow fairseq (``self_attn_layer_norm``,
``encoder_attn_layer_norm``, ``final_layer_norm`` for the FFN's, the stack's ``layer_norm`` and
``layernorm_embedding``); peri's output norms are ``*_out_norm``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

import torch
import torch.nn.functional as F
from torch import nn

from ..norms.sites import at
from . import placement as place

NormFactory = Callable[[int], nn.Module]


@dataclass
class TransformerConfig:
    d_model: int = 512
    heads: int = 4
    ffn_dim: int = 1024
    layers: int = 6
    dropout: float = 0.1
    attn_dropout: float = 0.0
    act_dropout: float = 0.0
    normalize_before: bool = True
    activation: str = "relu"
    placement: Optional[str] = None  # null: pre when normalize_before, else post
    layernorm_scaling: bool = False
    mixln_post_layers: Optional[int] = None
    embed_norm: Optional[bool] = None  # null: off
    final_norm: Optional[bool] = None  # null: the placement's (placement.has_final_norm)
    qk_norm: bool = False  # per-head norms of queries and keys (sites q, k)
    hybrid_first_pre: bool = False  # hybrid: each stack's first layer pre-norm (HybridNorm*)

    def __post_init__(self):
        if self.d_model % self.heads:
            raise ValueError(
                f"model.d_model={self.d_model} is not divisible by model.heads={self.heads}; "
                "choose heads that divide d_model"
            )
        for key in ("d_model", "heads", "ffn_dim", "layers"):
            if getattr(self, key) <= 0:
                raise ValueError(f"model.{key} must be positive, got {getattr(self, key)}")
        for key in ("dropout", "attn_dropout", "act_dropout"):
            if not 0.0 <= getattr(self, key) < 1.0:
                raise ValueError(f"model.{key} must be in [0, 1), got {getattr(self, key)}")
        if self.activation not in ACTIVATIONS:
            raise ValueError(
                f"model.activation must be one of {list(ACTIVATIONS)}, got {self.activation!r}"
            )
        self.placement = place.resolve(self)


ACTIVATIONS = {"relu": F.relu, "gelu": F.gelu}


class MultiheadAttention(nn.Module):
    """``qk_norm``: a norm factory; each head's queries and keys are normalized over the head
    dimension by two norms of their own (sites q and k) before the scaled dot product (QK-norm
    as in ViT-22B and OLMo 2; the 1/sqrt(d/H) scale is kept). ``v_norm``: the values too (site v),
    HybridNorm's QKV norm."""

    def __init__(self, d_model: int, heads: int, dropout: float = 0.0, qk_norm=None, v_norm=None):
        super().__init__()
        self.heads, self.dropout = heads, dropout
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)
        self.out_proj = nn.Linear(d_model, d_model)
        dh = d_model // heads
        self.q_norm = at(qk_norm, "q")(dh) if qk_norm is not None else None
        self.k_norm = at(qk_norm, "k")(dh) if qk_norm is not None else None
        self.v_norm = at(v_norm, "v")(dh) if v_norm is not None else None

    def _split(self, x):  # (B, T, d) -> (B, H, T, d/H)
        B, T, d = x.shape
        return x.view(B, T, self.heads, d // self.heads).transpose(1, 2)

    def queries(self, x):  # (B, T, d) -> (B, H, T, d/H), normalized under QK-norm
        q = self._split(self.q_proj(x))
        return self.q_norm(q) if self.q_norm is not None else q

    def keys(self, x):
        k = self._split(self.k_proj(x))
        return self.k_norm(k) if self.k_norm is not None else k

    def values(self, x):
        v = self._split(self.v_proj(x))
        return self.v_norm(v) if self.v_norm is not None else v

    def forward(
        self,
        query,
        key,
        value,
        key_padding_mask: Optional[torch.Tensor] = None,
        causal: bool = False,
    ) -> torch.Tensor:
        """key_padding_mask: (B, S) bool, True at padding keys. causal: query i sees keys <= i."""
        q, k, v = self.queries(query), self.keys(key), self.values(value)
        mask = None
        if key_padding_mask is not None:
            mask = ~key_padding_mask[:, None, None, :]  # True = may attend; (B, 1, 1, S)
            if causal:
                T, S = q.shape[2], k.shape[2]
                mask = mask & torch.ones(T, S, dtype=torch.bool, device=q.device).tril(S - T)
        out = F.scaled_dot_product_attention(
            q,
            k,
            v,
            attn_mask=mask,
            dropout_p=self.dropout if self.training else 0.0,
            is_causal=causal and mask is None,
        )
        B, H, T, dh = out.shape
        return self.out_proj(out.transpose(1, 2).reshape(B, T, H * dh))


def attention(cfg: TransformerConfig, norm: NormFactory, wiring: place.Wiring):
    """A sublayer's attention, with the query/key (and value) norms the config and wiring ask for."""
    qk = norm if cfg.qk_norm or wiring.qkv else None
    return MultiheadAttention(
        cfg.d_model, cfg.heads, cfg.attn_dropout, qk, norm if wiring.qkv else None
    )


class _Block(nn.Module):
    """Shared residual wiring of encoder and decoder layers."""

    def __init__(self, cfg: TransformerConfig, norm: NormFactory, wiring: place.Wiring):
        super().__init__()
        self.wiring = wiring
        self.drop = nn.Dropout(cfg.dropout)
        self.act = ACTIVATIONS[cfg.activation]
        self.act_drop = nn.Dropout(cfg.act_dropout)
        self.fc1 = nn.Linear(cfg.d_model, cfg.ffn_dim)
        self.fc2 = nn.Linear(cfg.ffn_dim, cfg.d_model)
        self.final_layer_norm = at(norm, "ffn")(cfg.d_model)
        self.ffn_out_norm = self.out_norm(cfg, norm, "ffn_out")

    def out_norm(self, cfg: TransformerConfig, norm: NormFactory, site: str) -> Optional[nn.Module]:
        return at(norm, site)(cfg.d_model) if self.wiring.mode == "peri" else None

    def attn_norm(
        self, cfg: TransformerConfig, norm: NormFactory, site: str
    ) -> Optional[nn.Module]:
        """An attention sublayer's norm on the stream; none where its norms are inside (hybrid)."""
        return None if self.wiring.rule("attn") == "inner" else at(norm, site)(cfg.d_model)

    def residual(self, x, norm, fn, out_norm=None, sublayer="attn"):
        """One sublayer ``fn`` ("attn" or "ffn") and its norm(s) on the residual stream, as the
        wiring's rule for it says (normlab.models.placement)."""
        w, rule = self.wiring, self.wiring.rule(sublayer)
        if rule in ("pre", "peri"):
            h = norm(x)
            y = fn(h * w.scale if w.scale != 1.0 else h)
            return x + self.drop(out_norm(y) if out_norm is not None else y)
        if rule == "reorder":
            return x + self.drop(norm(fn(x)))
        if rule == "inner":
            return x + self.drop(fn(x))
        if rule == "trunk":
            h = norm(x)
            return h + self.drop(fn(h))
        y = self.drop(fn(x))
        return norm(x * w.alpha + y if w.alpha != 1.0 else x + y)

    def feed_forward(self, x):
        """The FFN sublayer on the stream."""
        return self.residual(x, self.final_layer_norm, self.ffn, self.ffn_out_norm, "ffn")

    def ffn(self, h):
        return self.fc2(self.act_drop(self.act(self.fc1(h))))


class EncoderLayer(_Block):
    def __init__(self, cfg: TransformerConfig, norm: NormFactory, wiring: place.Wiring):
        super().__init__(cfg, norm, wiring)
        self.self_attn = attention(cfg, norm, wiring)
        self.self_attn_layer_norm = self.attn_norm(cfg, norm, "attn")
        self.self_attn_out_norm = self.out_norm(cfg, norm, "attn_out")

    def forward(self, x, pad_mask=None, causal=False):
        x = self.residual(
            x,
            self.self_attn_layer_norm,
            lambda h: self.self_attn(h, h, h, pad_mask, causal),
            self.self_attn_out_norm,
        )
        return self.feed_forward(x)


class DecoderLayer(_Block):
    def __init__(self, cfg: TransformerConfig, norm: NormFactory, wiring: place.Wiring):
        super().__init__(cfg, norm, wiring)
        self.self_attn = attention(cfg, norm, wiring)
        self.self_attn_layer_norm = self.attn_norm(cfg, norm, "attn")
        self.self_attn_out_norm = self.out_norm(cfg, norm, "attn_out")
        self.encoder_attn = attention(cfg, norm, wiring)
        self.encoder_attn_layer_norm = self.attn_norm(cfg, norm, "cross_attn")
        self.encoder_attn_out_norm = self.out_norm(cfg, norm, "cross_attn_out")

    def forward(self, x, memory, memory_pad_mask=None, self_pad_mask=None):
        x = self.residual(
            x,
            self.self_attn_layer_norm,
            lambda h: self.self_attn(h, h, h, self_pad_mask, causal=True),
            self.self_attn_out_norm,
        )
        x = self.residual(
            x,
            self.encoder_attn_layer_norm,
            lambda h: self.encoder_attn(h, memory, memory, memory_pad_mask),
            self.encoder_attn_out_norm,
        )
        return self.feed_forward(x)


class _Stack(nn.Module):
    """Layers wired by the placement, the optional embedding and final norms, DeepNorm's init.
    role: "stack" (LM, classifier), or "encoder"/"decoder" of an encoder-decoder whose other
    stack has ``other`` layers (DeepNorm's constants depend on both)."""

    def __init__(self, layer_cls, cfg: TransformerConfig, norm: NormFactory, role, other):
        super().__init__()
        wirings = place.wirings(cfg, role, other)
        self.layers = nn.ModuleList(layer_cls(cfg, norm, w) for w in wirings)
        self.layer_norm = at(norm, "final")(cfg.d_model) if place.has_final_norm(cfg) else None
        self.layernorm_embedding = at(norm, "embed")(cfg.d_model) if cfg.embed_norm else None
        if cfg.placement == "deepnorm":
            place.deepnorm_init(self.layers, place.deepnorm_constants(role, cfg.layers, other)[1])

    def finish(self, x):
        return self.layer_norm(x) if self.layer_norm is not None else x


class TransformerEncoder(_Stack):
    """A stack of encoder layers; ``causal=True`` makes it a decoder-only LM body."""

    def __init__(self, cfg: TransformerConfig, norm: NormFactory, role="stack", other=0):
        super().__init__(EncoderLayer, cfg, norm, role, other)

    def forward(self, x, pad_mask=None, causal=False):  # x: (B, T, d) embedded input
        for layer in self.layers:
            x = layer(x, pad_mask, causal)
        return self.finish(x)


class TransformerDecoder(_Stack):
    def __init__(self, cfg: TransformerConfig, norm: NormFactory, role="decoder", other=0):
        super().__init__(DecoderLayer, cfg, norm, role, other)

    def forward(self, x, memory, memory_pad_mask=None, self_pad_mask=None):
        for layer in self.layers:
            x = layer(x, memory, memory_pad_mask, self_pad_mask)
        return self.finish(x)
