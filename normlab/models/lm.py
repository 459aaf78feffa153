"""Decoder-only Transformer language model (Enwiki8): embed, causal encoder stack, tied softmax.

Built from the shared blocks (``TransformerEncoder(causal=True)`` and ``TokenEmbedding``), so every
norm position (``self_attn_layer_norm``, ``final_layer_norm`` per layer, and the stack's final
``layer_norm`` under pre-norm) comes from the norm factory.

How it differs from the paper's 12-layer Transformer-XL (Dai et al. 2019, the model of Xu et al.'s
Enwiki8 row):
- No segment-level recurrence: each window is modelled on its own, so the context of a byte is
  only the bytes before it in its window (Transformer-XL also attends to ``mem_len`` cached hidden
  states of the previous segment, 512 in training and 2,100 in evaluation for enwik8 base).
- Absolute sinusoidal positions added to the input embedding, instead of Transformer-XL's relative
  positional encodings inside every attention layer (with the learned biases u, v).
- One head size d_model/heads (Transformer-XL decouples d_head; the base recipe has 8 x 64 = 512,
  which is the same thing).
The residual/norm wiring is the same: Transformer-XL's default (no ``--pre_lnorm``) is post-norm,
which is ``normalize_before=false`` here, and its input and output embeddings are tied, as here.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from .embedding import TokenEmbedding
from .transformer import NormFactory, TransformerConfig, TransformerEncoder


class TransformerLM(nn.Module):
    """tokens (B, T) -> next-token logits (B, T, vocab); position t sees tokens 0..t."""

    def __init__(
        self, vocab: int, cfg: TransformerConfig, norm: NormFactory, max_positions: int = 1024
    ):
        super().__init__()
        self.vocab = vocab
        # Every window is full, so there is no padding; TokenEmbedding still wants a padding row,
        # so it gets one extra id (``vocab``) that never occurs and is left out of the softmax.
        self.embed = TokenEmbedding(
            vocab + 1, cfg.d_model, pad=vocab, dropout=cfg.dropout, max_positions=max_positions
        )
        self.decoder = TransformerEncoder(cfg, norm)
        # Output bias as in Transformer-XL's softmax layer; it learns the unigram distribution.
        self.out_bias = nn.Parameter(torch.zeros(vocab))

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        x = self.embed(tokens, norm=self.decoder.layernorm_embedding)
        h = self.decoder(x, causal=True)  # (B, T, d)
        return F.linear(h, self.embed.weight[: self.vocab], self.out_bias)  # (B, T, vocab)
