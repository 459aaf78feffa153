"""On-disk cache of preprocessed tensors, keyed by the source files and the options used."""

from __future__ import annotations

import hashlib
import io
import json
from pathlib import Path
from typing import Callable

import torch

from ..files import atomic_write_bytes

CACHE_VERSION = 2  # bump when a reader's output changes, so stale caches are rebuilt


def cache_key(files: list[Path], options: dict) -> str:
    stats = [
        (str(Path(f).resolve()), Path(f).stat().st_size, Path(f).stat().st_mtime_ns) for f in files
    ]
    blob = json.dumps(
        {"v": CACHE_VERSION, "files": stats, "options": options}, sort_keys=True, default=str
    )
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def cached(
    cache_dir: Path, name: str, files: list[Path], options: dict, build: Callable[[], dict]
) -> dict:
    """``build()`` once, then load its dict of tensors/lists/strings from ``cache_dir``."""
    path = Path(cache_dir) / f"{name}-{cache_key(files, options)}.pt"
    if path.exists():
        try:
            return torch.load(path, map_location="cpu", weights_only=True)
        except Exception:
            path.unlink(missing_ok=True)  # a corrupt cache is rebuilt, never trusted
    obj = build()
    buf = io.BytesIO()
    torch.save(obj, buf)
    atomic_write_bytes(path, buf.getvalue())
    return obj
