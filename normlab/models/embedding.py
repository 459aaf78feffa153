"""Token embeddings with fairseq's sqrt(d) scaling and sinusoidal positions."""

from __future__ import annotations

import math

import torch
from torch import nn


def sinusoidal_table(n: int, d: int) -> torch.Tensor:
    half = d // 2
    freq = torch.exp(
        torch.arange(half, dtype=torch.float) * -(math.log(10000.0) / max(half - 1, 1))
    )
    ang = torch.arange(n, dtype=torch.float)[:, None] * freq[None, :]
    table = torch.cat([ang.sin(), ang.cos()], dim=1)
    return torch.cat([table, torch.zeros(n, d - 2 * half)], dim=1) if d % 2 else table


class TokenEmbedding(nn.Module):
    """embed(tokens) * sqrt(d) + sinusoidal position, then (the stack's embedding norm, when it
    has one: fairseq's ``layernorm_embedding``) dropout. ``weight`` can be tied."""

    def __init__(
        self, vocab: int, d_model: int, pad: int, dropout: float = 0.1, max_positions: int = 1024
    ):
        super().__init__()
        self.pad, self.scale = pad, math.sqrt(d_model)
        self.embed = nn.Embedding(vocab, d_model, padding_idx=pad)
        nn.init.normal_(self.embed.weight, 0.0, d_model**-0.5)
        with torch.no_grad():
            self.embed.weight[pad].zero_()
        self.register_buffer(
            "positions", sinusoidal_table(max_positions, d_model), persistent=False
        )
        self.drop = nn.Dropout(dropout)

    @property
    def weight(self) -> nn.Parameter:
        return self.embed.weight

    def forward(self, tokens: torch.Tensor, offset: int = 0, norm=None) -> torch.Tensor:
        """(B, T) -> (B, T, d); ``norm``: the reading stack's embedding norm, or None."""
        T = tokens.shape[1]
        if offset + T > self.positions.shape[0]:
            raise ValueError(
                f"sequence length {offset + T} exceeds max_positions={self.positions.shape[0]}; "
                "raise model.max_positions"
            )
        x = self.embed(tokens) * self.scale + self.positions[offset : offset + T]
        return self.drop(norm(x) if norm is not None else x)
