"""Encoder-decoder Transformer for translation, built from the shared encoder/decoder stacks.

At paper scale this is fairseq's ``transformer_iwslt_de_en``: 6+6 layers, d 512, FFN 1024, 4 heads,
pre-norm, ``--share-all-embeddings`` (one matrix for source, target and output projection). Every
norm position (each sublayer's norm and, with pre-norm, the final encoder and decoder norms) is
built by the norm factory; the official AdaNorm code swapped only the two final norms.

Incremental decoding (``start``/``step``/``reorder``) runs the same layer modules one target
position at a time with cached keys and values; it equals the full forward up to float rounding
(tested), and is what greedy and beam search (``normlab.models.search``) call.
"""

from __future__ import annotations

import dataclasses

import torch
import torch.nn.functional as F
from torch import nn

from .embedding import TokenEmbedding
from .transformer import (
    MultiheadAttention,
    NormFactory,
    TransformerConfig,
    TransformerDecoder,
    TransformerEncoder,
)


class TransformerSeq2Seq(nn.Module):
    def __init__(
        self,
        src_vocab: int,
        tgt_vocab: int,
        pad: int,
        eos: int,
        cfg: TransformerConfig,
        norm: NormFactory,
        share_all_embeddings: bool = True,
        share_decoder_input_output: bool = True,
        decoder_layers: int = 0,
        max_positions: int = 1024,
    ):
        super().__init__()
        self.pad, self.eos = pad, eos
        if share_all_embeddings and src_vocab != tgt_vocab:
            raise ValueError(
                f"model.share_all_embeddings needs one joint vocabulary, got {src_vocab} source and "
                f"{tgt_vocab} target entries; use task.data.share_vocab=true or no shared embeddings"
            )
        self.src_embed = TokenEmbedding(src_vocab, cfg.d_model, pad, cfg.dropout, max_positions)
        self.tgt_embed = (
            self.src_embed
            if share_all_embeddings
            else TokenEmbedding(tgt_vocab, cfg.d_model, pad, cfg.dropout, max_positions)
        )
        dec = dataclasses.replace(cfg, layers=decoder_layers or cfg.layers)
        self.encoder = TransformerEncoder(cfg, norm, role="encoder", other=dec.layers)
        self.decoder = TransformerDecoder(dec, norm, role="decoder", other=cfg.layers)
        self.out_proj = None
        if not (share_all_embeddings or share_decoder_input_output):
            self.out_proj = nn.Linear(cfg.d_model, tgt_vocab, bias=False)
            nn.init.normal_(self.out_proj.weight, 0.0, cfg.d_model**-0.5)  # fairseq's output init

    def project(self, h: torch.Tensor) -> torch.Tensor:  # (..., d) -> (..., V)
        return self.out_proj(h) if self.out_proj is not None else F.linear(h, self.tgt_embed.weight)

    def encode(self, src: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        pad_mask = src.eq(self.pad)  # (B, S)
        x = self.src_embed(src, norm=self.encoder.layernorm_embedding)
        return self.encoder(x, pad_mask), pad_mask  # (B, S, d)

    def forward(self, src: torch.Tensor, prev: torch.Tensor) -> torch.Tensor:
        """Teacher forcing: ``prev`` = </s> + target[:-1], right-padded. Returns logits (B, T, V).
        Padding sits after every real position, so the causal mask alone keeps it out of view."""
        memory, pad_mask = self.encode(src)
        x = self.tgt_embed(prev, norm=self.decoder.layernorm_embedding)
        return self.project(self.decoder(x, memory, pad_mask))

    # --- incremental decoding ------------------------------------------------------------------
    @staticmethod
    def _attend(attn: MultiheadAttention, q_in, k, v, mask=None) -> torch.Tensor:
        q = attn.queries(q_in)  # (N, H, 1, dh)
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        N, H, T, dh = out.shape
        return attn.out_proj(out.transpose(1, 2).reshape(N, T, H * dh))

    @torch.no_grad()
    def start(self, src: torch.Tensor, beam: int = 1) -> dict:
        """Encode once; project every layer's cross-attention keys/values once; ``beam`` copies of
        each sentence's rows, adjacent (row b * beam + k)."""
        memory, pad_mask = self.encode(src)
        memory, pad_mask = memory.repeat_interleave(beam, 0), pad_mask.repeat_interleave(beam, 0)
        cross = [
            (
                layer.encoder_attn.keys(memory),
                layer.encoder_attn.values(memory),
            )
            for layer in self.decoder.layers
        ]
        return {
            "cross": cross,
            "mask": ~pad_mask[:, None, None, :],
            "self": [None] * len(cross),
            "step": 0,
        }

    @torch.no_grad()
    def step(self, tokens: torch.Tensor, state: dict) -> torch.Tensor:
        """Log-probabilities (N, V) of the next token given the last one (N,); updates ``state``."""
        x = self.tgt_embed(tokens[:, None], state["step"], self.decoder.layernorm_embedding)
        for i, layer in enumerate(self.decoder.layers):

            def self_attn(h, i=i, attn=layer.self_attn):
                k, v = attn.keys(h), attn.values(h)
                if state["self"][i] is not None:
                    k = torch.cat([state["self"][i][0], k], dim=2)
                    v = torch.cat([state["self"][i][1], v], dim=2)
                state["self"][i] = (k, v)  # (N, H, t, dh)
                return self._attend(attn, h, k, v)

            x = layer.residual(x, layer.self_attn_layer_norm, self_attn, layer.self_attn_out_norm)
            x = layer.residual(
                x,
                layer.encoder_attn_layer_norm,
                lambda h, i=i, attn=layer.encoder_attn: self._attend(
                    attn, h, *state["cross"][i], state["mask"]
                ),
                layer.encoder_attn_out_norm,
            )
            x = layer.feed_forward(x)
        x = self.decoder.finish(x)
        state["step"] += 1
        return F.log_softmax(self.project(x[:, 0]).float(), dim=-1)

    @staticmethod
    def reorder(state: dict, order: torch.Tensor) -> None:
        """Make row r continue the hypothesis of row ``order[r]`` (beam search's survivors). Rows
        only move between beams of one sentence, whose encoder states are equal, so only the
        self-attention caches move."""
        state["self"] = [
            None if kv is None else (kv[0].index_select(0, order), kv[1].index_select(0, order))
            for kv in state["self"]
        ]
