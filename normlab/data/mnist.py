"""MNIST in its released IDX format (the four ``*-idx?-ubyte[.gz]`` files), checked as it is read.

IDX: a big-endian header (magic, then one uint32 per dimension) followed by the uint8 data. The
magic is 0x00000803 = 2051 for images (ubyte, 3 dims) and 0x00000801 = 2049 for labels (ubyte,
1 dim). Every file must have its magic, its exact size (header + product of dims), the standard
counts (60,000 train, 10,000 test), 28 x 28 images and labels 0-9; anything else, including a
truncated .gz, raises DataError naming the file.

Split: the official test set is the test split; validation is the **last 5,000** training images
(``valid_size``; train keeps the first 55,000), a fixed hold-out so every run selects its
checkpoint on the same images and never on the test set.
"""

from __future__ import annotations

import gzip
import struct
import zlib
from pathlib import Path

import torch

from ..errors import DataError

IMAGES_MAGIC, LABELS_MAGIC = 2051, 2049
COUNTS = {"train": 60_000, "t10k": 10_000}
SIDE = 28
PREPARE = (
    "download the four files from https://ossci-datasets.s3.amazonaws.com/mnist/ (or "
    "yann.lecun.com/exdb/mnist/) into that folder; .gz or unpacked both work (normlab-data fetch "
    "mnist prints the commands)"
)


def find(data_dir: Path, stem: str) -> Path:
    """``stem`` = e.g. 'train-images-idx3-ubyte'; accepts .gz, raw, and the 'train-images.idx3-ubyte'
    spelling that the official .gz files unpack to."""
    alt = stem.replace("-idx", ".idx")
    for name in (f"{stem}.gz", stem, alt, f"{alt}.gz"):
        if (Path(data_dir) / name).is_file():
            return Path(data_dir) / name
    raise DataError(f"missing MNIST file {Path(data_dir) / stem}(.gz); {PREPARE}")


def read_idx(path: Path, magic: int) -> torch.Tensor:
    """The uint8 array of an IDX file, shape from its header; checks magic and exact size."""
    path = Path(path)
    try:
        raw = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    except (EOFError, gzip.BadGzipFile, zlib.error, OSError) as e:  # truncated or corrupt .gz
        raise DataError(
            f"{path}: cannot decompress ({type(e).__name__}: {e}); the download is truncated "
            f"or corrupt, delete it and {PREPARE}"
        ) from None
    if len(raw) < 4:
        raise DataError(f"{path}: {len(raw)} bytes, too short for an IDX header; {PREPARE}")
    (found,) = struct.unpack(">i", raw[:4])
    if found != magic:
        raise DataError(
            f"{path}: magic number {found}, expected {magic} "
            f"({'images' if magic == IMAGES_MAGIC else 'labels'}); not an MNIST IDX file of "
            f"this kind (swapped files, or an HTML error page saved as the file?); {PREPARE}"
        )
    ndim = magic & 0xFF
    head = 4 + 4 * ndim
    if len(raw) < head:
        raise DataError(f"{path}: truncated IDX header ({len(raw)} bytes, need {head}); {PREPARE}")
    dims = struct.unpack(f">{ndim}I", raw[4:head])
    size = 1
    for n in dims:
        size *= n
    if len(raw) != head + size:
        what = "truncated" if len(raw) < head + size else "has trailing bytes"
        raise DataError(
            f"{path}: {what}: {len(raw) - head:,} data bytes, header {dims} needs {size:,}; "
            f"{PREPARE}"
        )
    return torch.frombuffer(bytearray(memoryview(raw)[head:]), dtype=torch.uint8).reshape(dims)


def files(data_dir: Path) -> dict[str, tuple[Path, Path]]:
    """part ('train', 't10k') -> (images file, labels file); DataError if the folder or a file is missing."""
    if not Path(data_dir).is_dir():
        raise DataError(
            f"MNIST folder {data_dir} does not exist; set NORMLAB_DATA (or paths.data_dir) to the "
            f"folder that holds 'mnist/', and {PREPARE}"
        )
    return {
        part: (
            find(data_dir, f"{part}-images-idx3-ubyte"),
            find(data_dir, f"{part}-labels-idx1-ubyte"),
        )
        for part in COUNTS
    }


def read_part(img_path: Path, lab_path: Path, part: str) -> tuple[torch.Tensor, torch.Tensor]:
    """(images (N, 28, 28) uint8, labels (N,) int64) for part 'train' or 't10k', fully checked."""
    images, labels = read_idx(img_path, IMAGES_MAGIC), read_idx(lab_path, LABELS_MAGIC)
    n = COUNTS[part]
    if tuple(images.shape) != (n, SIDE, SIDE):
        raise DataError(
            f"{img_path}: shape {tuple(images.shape)}, expected ({n}, {SIDE}, {SIDE}) for MNIST "
            f"{part}; {PREPARE}"
        )
    if tuple(labels.shape) != (n,):
        raise DataError(f"{lab_path}: {labels.shape[0]:,} labels, expected {n:,}; {PREPARE}")
    if int(labels.max()) > 9:
        raise DataError(f"{lab_path}: label {int(labels.max())} is not a digit 0-9; {PREPARE}")
    return images, labels.long()


def load(data_dir: Path, valid_size: int = 5000) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    """{"train", "valid", "test"} -> (images uint8, labels int64); valid = last ``valid_size`` of train."""
    if not 0 < valid_size < COUNTS["train"]:
        raise ValueError(f"valid_size must be in (0, {COUNTS['train']}), got {valid_size}")
    paths = files(data_dir)
    (xtr, ytr), test = read_part(*paths["train"], "train"), read_part(*paths["t10k"], "t10k")
    cut = COUNTS["train"] - valid_size
    return {"train": (xtr[:cut], ytr[:cut]), "valid": (xtr[cut:], ytr[cut:]), "test": test}
