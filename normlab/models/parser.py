"""Chen & Manning (2014)-style transition parser: feature embeddings -> normed MLP -> transitions.

Why this model: Xu et al. (2019) list a 3-layer MLP-based parser for PTB. A feed-forward
network over arc-standard features is the MLP parser of that family; a BiLSTM/Transformer
encoder with a biaffine scorer would put most norms inside the encoder instead of the MLP.
Here every hidden layer is Linear -> norm -> activation -> dropout, so the norm variant under
study sits in each of the ``layers`` hidden layers (3 by default, our reading of the paper's
"3 layers"; Chen & Manning used one hidden layer with a cube activation).

Differences from Chen & Manning, all configurable or documented: ReLU by default (cube
activations blow up without a norm), randomly initialized embeddings (no pretrained word
vectors), Adam instead of AdaGrad (the trainer's optimizers), gold POS tags.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from .transformer import NormFactory

ACTIVATIONS = {"relu": torch.relu, "tanh": torch.tanh, "cube": lambda x: x * x * x}


class MLPParser(nn.Module):
    def __init__(
        self,
        n_words: int,
        n_tags: int,
        n_labels: int,
        norm: NormFactory,
        emb_dim: int = 50,
        hidden: int = 200,
        layers: int = 3,
        dropout: float = 0.5,
        activation: str = "relu",
        labeled: bool = False,
        n_word_feats: int = 18,
        n_label_feats: int = 12,
    ):
        super().__init__()
        if activation not in ACTIVATIONS:
            raise ValueError(
                f"task.model.activation must be one of {sorted(ACTIVATIONS)}, got {activation!r}"
            )
        if layers < 1:
            raise ValueError(f"task.model.layers must be >= 1, got {layers}")
        # Feature counts come from the transition system (normlab.data.transitions), which stays
        # out of models/: the model only scores feature vectors.
        self.n_labels, self.labeled, self.n_word_feats = n_labels, labeled, n_word_feats
        self.word_emb = nn.Embedding(n_words, emb_dim)
        self.tag_emb = nn.Embedding(n_tags, emb_dim)
        # Label features: 0 = no arc yet, 1..n_labels = the arc's label.
        self.label_emb = nn.Embedding(n_labels + 1, emb_dim) if labeled else None
        n_feats = 2 * n_word_feats + (n_label_feats if labeled else 0)
        dims = [n_feats * emb_dim] + [hidden] * layers
        self.linears = nn.ModuleList(nn.Linear(a, b) for a, b in zip(dims[:-1], dims[1:]))
        self.norms = nn.ModuleList(norm(hidden) for _ in range(layers))
        self.act = ACTIVATIONS[activation]
        self.drop = nn.Dropout(dropout)
        self.out = nn.Linear(hidden, 2 * n_labels + 1)
        for lin in self.linears:
            # He init keeps activations at unit scale through ReLU layers even without a norm,
            # so the norm-free baseline is not handicapped by shrinking signals.
            nn.init.normal_(lin.weight, 0.0, math.sqrt(2.0 / lin.in_features))
            nn.init.zeros_(lin.bias)

    def forward(self, feats: torch.Tensor) -> torch.Tensor:  # (B, F) int64 -> (B, 2L+1)
        k = self.n_word_feats
        parts = [self.word_emb(feats[:, :k]), self.tag_emb(feats[:, k : 2 * k])]
        if self.labeled:
            parts.append(self.label_emb(feats[:, 2 * k :]))
        x = torch.cat(parts, dim=1).flatten(1)  # (B, F * emb_dim)
        for lin, norm in zip(self.linears, self.norms):
            x = self.drop(self.act(norm(lin(x))))  # (B, hidden)
        return self.out(x)
