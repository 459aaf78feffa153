"""Transformer encoder classifier (RT, SST-2, IMDB): embed, encode, masked mean-pool, linear."""

from __future__ import annotations

import torch
from torch import nn

from .embedding import TokenEmbedding
from .transformer import NormFactory, TransformerConfig, TransformerEncoder


class TransformerClassifier(nn.Module):
    def __init__(
        self,
        vocab: int,
        classes: int,
        pad: int,
        cfg: TransformerConfig,
        norm: NormFactory,
        max_positions: int = 1024,
    ):
        super().__init__()
        self.pad = pad
        self.embed = TokenEmbedding(vocab, cfg.d_model, pad, cfg.dropout, max_positions)
        self.encoder = TransformerEncoder(cfg, norm)
        self.drop = nn.Dropout(cfg.dropout)
        self.head = nn.Linear(cfg.d_model, classes)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:  # (B, T) -> (B, classes)
        pad_mask = tokens.eq(self.pad)
        h = self.encoder(self.embed(tokens, norm=self.encoder.layernorm_embedding), pad_mask)
        keep = (~pad_mask).unsqueeze(-1).to(h.dtype)
        pooled = (h * keep).sum(1) / keep.sum(1).clamp_min(1.0)
        return self.head(self.drop(pooled))
