"""Greedy and beam search over a model with incremental decoding (``start``/``step``/``reorder``).

Beam search follows fairseq's ``SequenceGenerator``: 2k candidates per step; an end-of-sentence
candidate among the top k is finished with score sum(log p) / len ** lenpen (len counts </s>); the
best k non-finished candidates continue; a sentence is done when k hypotheses are finished; no
</s> before the first token (min_len 1); </s> is forced at the length limit.

Differences from fairseq, both deliberate: the length limit is per sentence,
``min(max_len_a * src_len + max_len_b, max_len)`` with src_len counting real source tokens
(fairseq uses the padded batch width, so its outputs depend on batching); finished sentences
stay in the batch instead of being removed, so each row's arithmetic is independent of the
others, which makes beam 1 reproduce greedy exactly. Cumulative scores are float64 so that adding
them never merges two distinct float32 log-probabilities into a tie.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch


@dataclass
class SearchConfig:
    beam: int = 5
    lenpen: float = 1.0
    max_len_a: float = 0.0
    max_len_b: int = 200
    max_len: int = 1024  # hard cap (the model's positions); set lower to bound decoding time
    min_len: int = 1


def length_limits(src: torch.Tensor, pad: int, c: SearchConfig) -> torch.Tensor:
    src_len = src.ne(pad).sum(1).double()
    return (c.max_len_a * src_len + c.max_len_b).floor().long().clamp(min=c.min_len, max=c.max_len)


def _mask(
    lprobs: torch.Tensor, step: int, limits: torch.Tensor, pad: int, eos: int, c: SearchConfig
) -> torch.Tensor:
    lprobs[:, pad] = -math.inf
    if step < c.min_len:
        lprobs[:, eos] = -math.inf
    forced = limits <= step  # rows that must end now
    if forced.any():
        keep = lprobs[forced, eos].clone()
        lprobs[forced] = -math.inf
        lprobs[forced, eos] = keep
    return lprobs


@torch.no_grad()
def greedy(model, src: torch.Tensor, c: SearchConfig) -> list[list[int]]:
    """Argmax decoding; returns each sentence's tokens without </s>."""
    pad, eos = model.pad, model.eos
    limits = length_limits(src, pad, c)
    state = model.start(src)
    B = src.size(0)
    last = torch.full((B,), eos, dtype=torch.long, device=src.device)
    done = torch.zeros(B, dtype=torch.bool, device=src.device)
    out = []
    for step in range(int(limits.max()) + 1):
        lprobs = _mask(model.step(last, state), step, limits, pad, eos, c)
        nxt = lprobs.argmax(-1)
        out.append(torch.where(done, torch.full_like(nxt, pad), nxt))
        done |= nxt.eq(eos)
        if done.all():
            break
        last = nxt
    hyps = torch.stack(out, 1).tolist()
    return [
        [t for t in h[: h.index(eos)]] if eos in h else [t for t in h if t != pad] for h in hyps
    ]


@torch.no_grad()
def beam_search(model, src: torch.Tensor, c: SearchConfig) -> list[list[int]]:
    """The best finished hypothesis per sentence (tokens without </s>)."""
    pad, eos, K = model.pad, model.eos, c.beam
    if K < 1:
        raise ValueError(f"beam must be >= 1, got {K}")
    B, dev = src.size(0), src.device
    limits = length_limits(src, pad, c)
    row_limits = limits.repeat_interleave(K)
    state = model.start(src, beam=K)
    scores = torch.full((B, K), -math.inf, dtype=torch.float64, device=dev)
    scores[:, 0] = 0.0  # all beams start equal: only beam 0 may expand
    tokens = torch.full((B * K, 1), eos, dtype=torch.long, device=dev)
    finished: list[list[tuple[float, list[int]]]] = [[] for _ in range(B)]
    done = [False] * B
    base = (torch.arange(B, device=dev) * K)[:, None]
    for step in range(int(limits.max()) + 1):
        lprobs = _mask(model.step(tokens[:, -1], state), step, row_limits, pad, eos, c)
        V = lprobs.size(1)
        cand = (scores[:, :, None] + lprobs.double().view(B, K, V)).view(B, K * V)
        top_s, top_i = cand.topk(min(2 * K, K * V), dim=1)  # (B, 2K)
        beam_of, tok = top_i // V, top_i % V
        is_eos = tok.eq(eos) & torch.isfinite(top_s)
        is_eos[:, K:] = False  # only the top k may finish (fairseq)
        for b, r in is_eos.nonzero().tolist():
            if done[b] or len(finished[b]) >= K:
                continue
            hyp = tokens[b * K + beam_of[b, r], 1:].tolist()
            finished[b].append((top_s[b, r].item() / (step + 1) ** c.lenpen, hyp))
        for b in range(B):
            done[b] = done[b] or len(finished[b]) >= K
        if all(done):
            break
        # The k best candidates that did not end: rank eos candidates last, then take the top k.
        rank = torch.arange(top_s.size(1), device=dev).expand_as(top_s) + tok.eq(eos) * top_s.size(
            1
        )
        pick = rank.topk(K, dim=1, largest=False).indices.sort(1).values  # (B, K)
        scores = top_s.gather(1, pick)
        scores[tok.gather(1, pick).eq(eos)] = -math.inf  # fewer than k live candidates
        rows = (base + beam_of.gather(1, pick)).view(-1)
        model.reorder(state, rows)
        tokens = torch.cat([tokens.index_select(0, rows), tok.gather(1, pick).view(-1, 1)], dim=1)
    return [max(f, key=lambda x: x[0])[1] if f else [] for f in finished]


def decode(model, src: torch.Tensor, c: SearchConfig) -> list[list[int]]:
    """Greedy for beam 1 (same output, less bookkeeping), beam search otherwise."""
    return greedy(model, src, c) if c.beam == 1 else beam_search(model, src, c)
