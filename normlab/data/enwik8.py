"""Enwik8 (Hutter Prize): the raw bytes as one uint8 tensor, the standard split, and windows.

The vocabulary is the 256 byte values: token id = byte value, so the file *is* the tensor and
nothing needs a cache. "Character" in bits per character means byte, as in every enwik8 result
(Transformer-XL's ``prep_enwik8.py`` also models bytes).

Split: the first 90M bytes train, the next 5M valid, the last 5M test (Transformer-XL / AWD-LSTM
``prep_enwik8.py``). A shorter file (a prefix such as the shipped ``enwik8_small``) is split in
the same 90/5/5 proportions and labeled as a prefix wherever ``note`` is shown: its valid and test
bytes come from enwik8's training part, so its numbers are not comparable to published ones.
"""

from __future__ import annotations

import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import torch

from ..errors import DataError

FULL_SIZE = 100_000_000
# Looked up in this order: the raw file, the released zip, the prefix shipped for tests.
SOURCES = ("enwik8", "enwik8.zip", "enwik8_small")
PREPARE = (
    "download http://mattmahoney.net/dc/enwik8.zip into that folder (the zip or the unzipped "
    "raw file 'enwik8' both work; normlab-data fetch enwik8 prints the command)"
)


@dataclass
class Corpus:
    data: torch.Tensor  # (n,) uint8, the whole file
    bounds: dict[str, tuple[int, int]]  # split -> [start, end) byte offsets into ``data``
    source: Path
    note: Optional[str]  # None for the full benchmark file, else what it is

    def sizes(self) -> dict[str, int]:
        return {s: b - a for s, (a, b) in self.bounds.items()}


def find_source(data_dir: Path) -> Path:
    for name in SOURCES:
        if (Path(data_dir) / name).is_file():
            return Path(data_dir) / name
    raise DataError(f"no enwik8 data in {data_dir} (looked for {', '.join(SOURCES)}); {PREPARE}")


def read_bytes(path: Path) -> bytes:
    path = Path(path)
    if path.suffix != ".zip":
        return path.read_bytes()
    try:
        with zipfile.ZipFile(path) as z:
            names = z.namelist()
            if "enwik8" not in names:
                raise DataError(f"{path} holds {names[:5]} but no member 'enwik8'; {PREPARE}")
            return z.read("enwik8")
    except (zipfile.BadZipFile, EOFError, OSError) as e:  # truncated download, CRC mismatch
        raise DataError(f"{path} is not a readable zip ({e}); delete it and {PREPARE}") from None


def split_bounds(n: int) -> dict[str, tuple[int, int]]:
    """90/5/5 by proportion; for n = 100M exactly the standard 90M/5M/5M."""
    a, b = n * 90 // 100, n * 95 // 100
    return {"train": (0, a), "valid": (a, b), "test": (b, n)}


def load(data_dir: Path) -> Corpus:
    path = find_source(data_dir)
    raw = read_bytes(path)
    n = len(raw)
    if n > FULL_SIZE:
        raise DataError(
            f"{path} has {n:,} bytes, more than enwik8's {FULL_SIZE:,}: it is not enwik8 "
            f"(enwik9?); {PREPARE}"
        )
    if n < 1000:
        raise DataError(f"{path} has only {n:,} bytes, too few to split 90/5/5; {PREPARE}")
    bounds = split_bounds(n)
    note = None
    if n < FULL_SIZE:
        sz = {s: f"{b - a:,}" for s, (a, b) in bounds.items()}
        note = (
            f"prefix: first {n:,} of enwik8's {FULL_SIZE:,} bytes ({path.name}), split 90/5/5 "
            f"(train {sz['train']} / valid {sz['valid']} / test {sz['test']} bytes); not the "
            "standard 90M/5M/5M benchmark split"
        )
    data = torch.frombuffer(bytearray(raw), dtype=torch.uint8)
    return Corpus(data, bounds, path, note)


def train_starts(end: int, length: int, offset: int) -> torch.Tensor:
    """Starts of non-overlapping training windows of ``length`` inputs (+1 target) in [0, end).

    Window at ``a`` reads bytes a..a+length (inputs a..a+length-1, targets a+1..a+length), so no
    target crosses ``end`` (the start of the validation split).
    """
    if not 0 <= offset < length:
        raise ValueError(f"offset {offset} must be in [0, {length})")
    return torch.arange(offset, end - length, length, dtype=torch.int64)


def eval_windows(start: int, end: int, length: int) -> list[tuple[int, int]]:
    """Contiguous, non-overlapping target ranges [a, b) that cover [start, end) exactly once.

    Every window is ``length`` long except possibly the last. The inputs of window [a, b) are the
    bytes a-1 .. b-2, so the first byte of the split is predicted from the byte before it (the
    last byte of the previous split) and every byte of the split is scored: start must be >= 1.
    """
    if start < 1:
        raise ValueError(
            "evaluation needs the byte before the split as context: start must be >= 1"
        )
    if length <= 0:
        raise ValueError(f"window length must be positive, got {length}")
    return [(a, min(a + length, end)) for a in range(start, end, length)]
