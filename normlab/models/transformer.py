"""The one Transformer of normlab: attention, encoder/decoder layers and stacks.

Every norm position is built by a ``norm`` factory (``dim -> nn.Module``, see
``normlab.norms.norm_factory``); nothing here names a norm class. Pre/post placement follows
fairseq's ``normalize_before``: post-norm x <- N(x + F(x)); pre-norm x <- x + F(N(x)), and only
pre-norm stacks end with a final norm. Module names follow fairseq (``self_attn_layer_norm``,
``encoder_attn_layer_norm``, ``final_layer_norm``, ``layer_norm``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

import torch
import torch.nn.functional as F
from torch import nn

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


ACTIVATIONS = {"relu": F.relu, "gelu": F.gelu}


class MultiheadAttention(nn.Module):
    def __init__(self, d_model: int, heads: int, dropout: float = 0.0):
        super().__init__()
        self.heads, self.dropout = heads, dropout
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)
        self.out_proj = nn.Linear(d_model, d_model)

    def _split(self, x):  # (B, T, d) -> (B, H, T, d/H)
        B, T, d = x.shape
        return x.view(B, T, self.heads, d // self.heads).transpose(1, 2)

    def forward(
        self,
        query,
        key,
        value,
        key_padding_mask: Optional[torch.Tensor] = None,
        causal: bool = False,
    ) -> torch.Tensor:
        """key_padding_mask: (B, S) bool, True at padding keys. causal: query i sees keys <= i."""
        q, k, v = (
            self._split(self.q_proj(query)),
            self._split(self.k_proj(key)),
            self._split(self.v_proj(value)),
        )
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


class _Block(nn.Module):
    """Shared residual wiring of encoder and decoder layers."""

    def __init__(self, cfg: TransformerConfig, norm: NormFactory):
        super().__init__()
        self.normalize_before = cfg.normalize_before
        self.drop = nn.Dropout(cfg.dropout)
        self.act = ACTIVATIONS[cfg.activation]
        self.act_drop = nn.Dropout(cfg.act_dropout)
        self.fc1 = nn.Linear(cfg.d_model, cfg.ffn_dim)
        self.fc2 = nn.Linear(cfg.ffn_dim, cfg.d_model)
        self.final_layer_norm = norm(cfg.d_model)

    def residual(self, x, norm, fn):
        h = norm(x) if self.normalize_before else x
        x = x + self.drop(fn(h))
        return x if self.normalize_before else norm(x)

    def ffn(self, h):
        return self.fc2(self.act_drop(self.act(self.fc1(h))))


class EncoderLayer(_Block):
    def __init__(self, cfg: TransformerConfig, norm: NormFactory):
        super().__init__(cfg, norm)
        self.self_attn = MultiheadAttention(cfg.d_model, cfg.heads, cfg.attn_dropout)
        self.self_attn_layer_norm = norm(cfg.d_model)

    def forward(self, x, pad_mask=None, causal=False):
        x = self.residual(
            x, self.self_attn_layer_norm, lambda h: self.self_attn(h, h, h, pad_mask, causal)
        )
        return self.residual(x, self.final_layer_norm, self.ffn)


class DecoderLayer(_Block):
    def __init__(self, cfg: TransformerConfig, norm: NormFactory):
        super().__init__(cfg, norm)
        self.self_attn = MultiheadAttention(cfg.d_model, cfg.heads, cfg.attn_dropout)
        self.self_attn_layer_norm = norm(cfg.d_model)
        self.encoder_attn = MultiheadAttention(cfg.d_model, cfg.heads, cfg.attn_dropout)
        self.encoder_attn_layer_norm = norm(cfg.d_model)

    def forward(self, x, memory, memory_pad_mask=None, self_pad_mask=None):
        x = self.residual(
            x,
            self.self_attn_layer_norm,
            lambda h: self.self_attn(h, h, h, self_pad_mask, causal=True),
        )
        x = self.residual(
            x,
            self.encoder_attn_layer_norm,
            lambda h: self.encoder_attn(h, memory, memory, memory_pad_mask),
        )
        return self.residual(x, self.final_layer_norm, self.ffn)


class TransformerEncoder(nn.Module):
    """A stack of encoder layers; ``causal=True`` makes it a decoder-only LM body."""

    def __init__(self, cfg: TransformerConfig, norm: NormFactory):
        super().__init__()
        self.layers = nn.ModuleList(EncoderLayer(cfg, norm) for _ in range(cfg.layers))
        self.layer_norm = norm(cfg.d_model) if cfg.normalize_before else None

    def forward(self, x, pad_mask=None, causal=False):  # x: (B, T, d) embedded input
        for layer in self.layers:
            x = layer(x, pad_mask, causal)
        return self.layer_norm(x) if self.layer_norm is not None else x


class TransformerDecoder(nn.Module):
    def __init__(self, cfg: TransformerConfig, norm: NormFactory):
        super().__init__()
        self.layers = nn.ModuleList(DecoderLayer(cfg, norm) for _ in range(cfg.layers))
        self.layer_norm = norm(cfg.d_model) if cfg.normalize_before else None

    def forward(self, x, memory, memory_pad_mask=None, self_pad_mask=None):
        for layer in self.layers:
            x = layer(x, memory, memory_pad_mask, self_pad_mask)
        return self.layer_norm(x) if self.layer_norm is not None else x
