"""Word tokenization, vocabularies, and ragged token storage as compact tensors."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Iterable, Sequence

import torch

PAD, UNK = "<pad>", "<unk>"
_TOKEN = re.compile(r"[a-z0-9]+(?:'[a-z]+)?|[^\sa-z0-9]")
_HTML_BREAK = re.compile(r"<br\s*/?>", re.I)


def tokenize(text: str) -> list[str]:
    """Lowercase words, keeping clitics ("don't") and each punctuation mark as a token.

    A deliberately simple, documented tokenizer: the same for RT, SST-2 and IMDB, so that the
    norm comparison does not depend on a tokenizer download. IMDB's <br /> tags become spaces.
    """
    return _TOKEN.findall(_HTML_BREAK.sub(" ", text).lower())


@dataclass
class Vocab:
    itos: list[str]

    def __post_init__(self):
        self.stoi = {w: i for i, w in enumerate(self.itos)}

    @property
    def pad(self) -> int:
        return self.stoi[PAD]

    @property
    def unk(self) -> int:
        return self.stoi[UNK]

    def __len__(self) -> int:
        return len(self.itos)

    def encode(self, tokens: Iterable[str]) -> list[int]:
        unk = self.unk
        return [self.stoi.get(t, unk) for t in tokens]

    @classmethod
    def build(cls, docs: Iterable[Sequence[str]], min_freq: int = 1, max_size: int = 0) -> Vocab:
        """From training documents only; ties broken alphabetically so the vocabulary is stable."""
        counts = Counter(t for d in docs for t in d)
        words = sorted(
            (w for w, c in counts.items() if c >= min_freq), key=lambda w: (-counts[w], w)
        )
        if max_size:
            words = words[: max_size - 2]
        return cls([PAD, UNK] + words)


@dataclass
class Ragged:
    """Variable-length int sequences as one flat tensor plus offsets (no Python lists)."""

    flat: torch.Tensor  # (total,) int32
    offsets: torch.Tensor  # (n + 1,) int64

    @classmethod
    def from_lists(cls, seqs: Sequence[Sequence[int]]) -> Ragged:
        lengths = torch.tensor([len(s) for s in seqs], dtype=torch.int64)
        offsets = torch.zeros(len(seqs) + 1, dtype=torch.int64)
        offsets[1:] = lengths.cumsum(0)
        flat = torch.tensor([t for s in seqs for t in s], dtype=torch.int32)
        return cls(flat, offsets)

    def __len__(self) -> int:
        return self.offsets.numel() - 1

    def lengths(self) -> torch.Tensor:
        return self.offsets[1:] - self.offsets[:-1]

    def __getitem__(self, i: int) -> torch.Tensor:
        return self.flat[self.offsets[i] : self.offsets[i + 1]]

    def state(self) -> dict:
        return {"flat": self.flat, "offsets": self.offsets}
