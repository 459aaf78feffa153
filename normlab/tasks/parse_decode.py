"""Greedy arc-standard decoding for the PTB parser: every sentence of a split advances one
transition per step, in batches, the illegal transitions masked."""

from __future__ import annotations

from typing import Sequence

import torch

from ..data.transitions import Configuration
from ..models.parser import MLPParser


@torch.no_grad()
def greedy_parse(
    model: MLPParser, sentences: Sequence[tuple[Sequence[int], Sequence[int]]], chunk: int = 4096
) -> list[Configuration]:
    """Parse (word ids, tag ids) pairs (each with ROOT first and NULL last) greedily, all sentences
    in one batch per transition step; illegal transitions are masked. Returns final configurations."""
    device = next(model.parameters()).device
    L = model.n_labels
    configs = [Configuration(len(w) - 2) for w, _ in sentences]
    active = [j for j, c in enumerate(configs) if not c.terminal()]
    while active:
        for start in range(0, len(active), chunk):
            part = active[start : start + chunk]
            feats = torch.tensor(
                [configs[j].features(*sentences[j], model.labeled) for j in part],
                dtype=torch.int64,
                device=device,
            )
            # A diverged model's NaN/inf scores must still yield a legal transition.
            logits = torch.nan_to_num(model(feats).float(), nan=-1e30, posinf=1e30, neginf=-1e30)
            legal = torch.tensor(
                [configs[j].legal() for j in part], dtype=torch.bool, device=device
            )
            mask = torch.cat(
                [legal[:, :1], legal[:, 1:2].expand(-1, L), legal[:, 2:].expand(-1, L)], dim=1
            )
            best = logits.masked_fill(~mask, float("-inf")).argmax(1).tolist()
            for j, t in zip(part, best):
                configs[j].apply(t, L)
        active = [j for j in active if not configs[j].terminal()]
    return configs
