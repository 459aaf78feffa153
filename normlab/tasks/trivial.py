"""Trivial baselines, the math: what "at the unigram level" is measured against. Each task's
``trivial_baselines`` applies these to its own data pipeline (same subset, splits, caps).

- bits per byte of a unigram and a bigram byte model (add-one, and add-alpha with alpha chosen on
  the valid split: add-one over-smooths a bigram fitted on 40,000 bytes);
- accuracy of always predicting the train split's majority class;
- UAS of attaching every word to its right neighbour (the last word to the root).
"""

from __future__ import annotations

import math

import torch

SPLITS = ("train", "valid", "test")


def bits_per_byte(
    data: torch.Tensor, bounds: dict[str, tuple[int, int]]
) -> dict[str, dict[str, float]]:
    """{"unigram": {split: bpc}, "bigram": {split: bpc}, "bigram_valid": {split: bpc, "alpha": a}}
    with every model fitted on ``bounds["train"]``: add-one smoothing, and (bigram_valid) add-alpha
    smoothing with alpha minimizing the valid split's bpc (scipy's bounded scalar search over
    log alpha in [1e-4, 10]). A split starting at byte 0 has no predecessor for its first byte:
    the bigram scores it from its second byte on."""
    from scipy import optimize

    x = data.to(torch.int64)
    a, b = bounds["train"]
    uni = torch.bincount(x[a:b], minlength=256).double() + 1.0
    log_uni = (uni / uni.sum()).log2()
    seg = x[a:b]
    counts = torch.bincount(seg[:-1] * 256 + seg[1:], minlength=256 * 256).double().view(256, 256)

    def log_big(alpha: float) -> torch.Tensor:
        return ((counts + alpha) / (counts.sum(1, keepdim=True) + 256 * alpha)).log2()

    def score(table: torch.Tensor, lo: int, hi: int) -> float:
        first = max(lo, 1)
        return float(-table[x[first - 1 : hi - 1], x[first:hi]].mean())

    best = optimize.minimize_scalar(
        lambda la: score(log_big(math.exp(la)), *bounds["valid"]),
        bounds=(math.log(1e-4), math.log(10.0)),
        method="bounded",
        options={"xatol": 1e-4},
    )
    alpha = float(math.exp(best.x))
    out: dict[str, dict[str, float]] = {
        "unigram": {},
        "bigram": {},
        "bigram_valid": {"alpha": alpha},
    }
    add_one, tuned = log_big(1.0), log_big(alpha)
    for s, (lo, hi) in bounds.items():
        out["unigram"][s] = float(-log_uni[x[lo:hi]].mean())
        out["bigram"][s] = score(add_one, lo, hi)
        out["bigram_valid"][s] = score(tuned, lo, hi)
    return out


def majority_accuracy(labels: dict[str, torch.Tensor]) -> tuple[int, dict[str, float]]:
    """(majority class of the train labels, accuracy % of predicting it on each split)."""

    major = int(torch.bincount(labels["train"]).argmax())
    return major, {s: 100.0 * float((y == major).double().mean()) for s, y in labels.items()}


def right_neighbour_uas(heads: torch.Tensor, offsets: torch.Tensor, punct: torch.Tensor) -> float:
    """UAS % of heads[i] = i + 1 within each sentence, the last word to the root (0)."""

    n = heads.numel()
    pos = (
        torch.arange(n) - torch.repeat_interleave(offsets[:-1], offsets[1:] - offsets[:-1]) + 1
    )  # 1-based
    last = torch.zeros(n, dtype=torch.bool)
    last[(offsets[1:] - 1)] = True
    pred = torch.where(last, torch.zeros_like(pos), pos + 1)
    keep = ~punct
    return 100.0 * float(((pred == heads.to(torch.int64)) & keep).sum()) / max(int(keep.sum()), 1)


def majority_baseline(labels: dict[str, torch.Tensor]) -> dict:
    """The classification tasks' baseline rows from each split's labels."""
    major, acc = majority_accuracy(labels)
    return {
        "metric": "acc",
        "rows": {f"majority class (train's: {major})": acc},
        "sizes": {s: int(y.numel()) for s, y in labels.items()},
    }
