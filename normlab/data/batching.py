"""Batching: by token budget over the whole length-sorted set (sequence pairs, as fairseq's
``batch_by_size``), length-bucketed by example count (classification), and padding."""

from __future__ import annotations

from typing import Callable, Optional, Sequence

import torch


def bucket_batches(
    lengths: torch.Tensor,
    batch_size: int,
    generator: Optional[torch.Generator] = None,
    bucket: int = 100,
) -> list[torch.Tensor]:
    """Index batches of ``batch_size`` examples of similar lengths. With a generator: examples
    shuffled, then sorted by length within chunks of ``bucket`` batches, so batch contents still
    change between epochs, and the batch order shuffled (a pure function of the generator's
    seed); without: sorted by length, for evaluation and decoding."""
    if batch_size <= 0:
        raise ValueError("set a positive batch_size (task.data.batch_size)")
    n = lengths.numel()
    if generator is not None:
        order = torch.randperm(n, generator=generator)
        parts = [
            c[torch.argsort(lengths[c], stable=True)] for c in order.split(batch_size * bucket)
        ]
        order = torch.cat(parts) if parts else order
    else:
        order = torch.argsort(lengths, stable=True)
    batches = list(order.split(batch_size)) if n else []
    if generator is not None:
        perm = torch.randperm(len(batches), generator=generator).tolist()
        batches = [batches[i] for i in perm]
    return batches


def token_batches(
    src_lengths: torch.Tensor,
    tgt_lengths: torch.Tensor,
    max_tokens: int,
    generator: Optional[torch.Generator] = None,
    multiple: int = 1,
) -> list[torch.Tensor]:
    """Index batches of pairs under a token budget, as fairseq's translation task forms them.

    The whole set is sorted by source length, ties by target length, remaining ties in a random
    order (``generator``), so every batch holds pairs of near-equal lengths and the padding is
    what the lengths force. A batch is cut when one more pair would make (pairs x longest
    max(source, target)) exceed ``max_tokens``; with ``multiple`` > 1 it keeps a multiple of that
    many pairs (fairseq's --required-batch-size-multiple) and the rest opens the next batch (or,
    when the rest and the next pair overflow too, is a batch of its own). With a
    generator the batch order is shuffled too; without, batches follow the sorted order
    (evaluation). Every pair is in exactly one batch; a pair longer than the budget is a batch of
    its own.
    """
    if max_tokens <= 0:
        raise ValueError("set a positive max_tokens (task.data.max_tokens)")
    if multiple < 1:
        raise ValueError(f"multiple={multiple}: must be >= 1 (task.data.batch_multiple)")
    n = src_lengths.numel()
    order = torch.randperm(n, generator=generator) if generator is not None else torch.arange(n)
    order = order[torch.argsort(tgt_lengths[order], stable=True)]
    order = order[torch.argsort(src_lengths[order], stable=True)]
    sizes = torch.maximum(src_lengths, tgt_lengths)[order].tolist()
    batches, start, longest = [], 0, 0
    for i, size in enumerate(sizes):
        while i > start and max(longest, size) * (i - start + 1) > max_tokens:
            count = i - start
            keep = max(multiple * (count // multiple), count % multiple)
            batches.append(order[start : start + keep])
            start += keep
            longest = max(sizes[start:i], default=0)
        longest = max(longest, size)
    if start < n:
        batches.append(order[start:])
    if generator is not None:
        perm = torch.randperm(len(batches), generator=generator).tolist()
        batches = [batches[i] for i in perm]
    return batches


def padding_record(
    batches: Sequence[torch.Tensor], src_lengths: torch.Tensor, tgt_lengths: torch.Tensor
) -> dict:
    """What one epoch of pair batches holds: pairs and target tokens per batch, and the share of
    padded source and target positions that are padding."""
    real = padded = tgt_real = 0
    for b in batches:
        s, t = src_lengths[b], tgt_lengths[b]
        real += int(s.sum() + t.sum())
        padded += len(b) * int(s.max() + t.max())
        tgt_real += int(t.sum())
    k = max(len(batches), 1)
    return {
        "batches": len(batches),
        "pairs_per_batch": round(sum(len(b) for b in batches) / k, 1),
        "target_tokens_per_batch": round(tgt_real / k, 1),
        "padding_share": round(1 - real / padded, 4) if padded else 0.0,
    }


def pad(seqs: Sequence[torch.Tensor], pad_id: int, max_len: int = 0) -> torch.Tensor:
    """(B, T) int64, right-padded; sequences longer than ``max_len`` (if > 0) are cut."""
    if max_len:
        seqs = [s[:max_len] for s in seqs]
    T = max(len(s) for s in seqs)
    out = torch.full((len(seqs), T), pad_id, dtype=torch.int64)
    for i, s in enumerate(seqs):
        out[i, : len(s)] = s
    return out


class LazyBatches(Sequence):
    """A list of index batches that collates on access, so an epoch costs no memory up front."""

    def __init__(
        self, index_batches: list[torch.Tensor], collate: Callable[[torch.Tensor], object]
    ):
        self.index_batches, self.collate = index_batches, collate

    def __len__(self) -> int:
        return len(self.index_batches)

    def __getitem__(self, i):
        return self.collate(self.index_batches[i])


def epoch_generator(seed: int, epoch: int) -> torch.Generator:
    g = torch.Generator()
    g.manual_seed(seed * 100_003 + epoch)
    return g
