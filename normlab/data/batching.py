"""Length-bucketed batching (by example count or token budget) and padding."""

from __future__ import annotations

from typing import Callable, Optional, Sequence

import torch


def bucket_batches(
    lengths: torch.Tensor,
    batch_size: int = 0,
    max_tokens: int = 0,
    generator: Optional[torch.Generator] = None,
    bucket: int = 100,
) -> list[torch.Tensor]:
    """Index batches of similar lengths. With a generator: shuffled examples and batch order
    (a pure function of the generator's seed); without: sorted by length, for evaluation.

    ``max_tokens`` caps padded size (batch * longest) as fairseq's --max-tokens does;
    ``batch_size`` caps the number of examples. At least one of them must be set.
    """
    if batch_size <= 0 and max_tokens <= 0:
        raise ValueError(
            "set a positive batch_size or max_tokens (task.data.batch_size / max_tokens)"
        )
    n = lengths.numel()
    if generator is not None:
        order = torch.randperm(n, generator=generator)
        chunk = max(batch_size, 1) * bucket if batch_size else max(1, n // 20)
        parts = [c[torch.argsort(lengths[c], stable=True)] for c in order.split(chunk)]
        order = torch.cat(parts) if parts else order
    else:
        order = torch.argsort(lengths, stable=True)
    batches, start = [], 0
    lens = lengths[order].tolist()
    cur_max = 0
    for i, ln in enumerate(lens):
        new_max = max(cur_max, ln)
        size = i - start + 1
        if i > start and (
            (batch_size and size > batch_size) or (max_tokens and new_max * size > max_tokens)
        ):
            batches.append(order[start:i])
            start, new_max = i, ln
        cur_max = new_max
    if start < n:
        batches.append(order[start:])
    if generator is not None:
        perm = torch.randperm(len(batches), generator=generator).tolist()
        batches = [batches[i] for i in perm]
    return batches


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
