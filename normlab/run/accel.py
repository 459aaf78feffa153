"""Hardware speed: mixed precision, torch.compile, determinism per device, batch prefetch.

precision: ``fp32`` (default), ``tf32`` (fp32 storage, TF32 matmuls/convolutions on Ampere+ GPUs;
on CPU the same as fp32), ``bf16`` (autocast), ``fp16`` (autocast plus fairseq-style dynamic loss
scaling with ``torch.amp.GradScaler``). fp16 is accepted on CPU as well because torch's CPU
autocast and GradScaler support it: it is slow there and exists so the scaler path is testable
without a GPU. Parameters and optimizer state stay fp32 in every mode; the norms compute their
statistics in fp32 under autocast (``norms.layers.Norm.forward``).
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any, Optional

import torch

from ..schema import default

_AUTOCAST = {"bf16": torch.bfloat16, "fp16": torch.float16}
_USER_INDUCTOR_DIR = os.environ.get("TORCHINDUCTOR_CACHE_DIR")


def deterministic_for(value, device: torch.device) -> bool:
    """``auto``: deterministic on CPU (where it is free and buys bitwise resume), not on CUDA
    (deterministic kernels cost ~30% of a Transformer step on an H200 and still do not make CUDA
    runs bitwise reproducible across resumes: see docs/gpu.md)."""
    if value == "auto":
        return device.type != "cuda"
    return bool(value)


def set_matmul_precision(precision: str) -> None:
    tf32 = precision == "tf32"
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.allow_tf32 = tf32


def autocast(precision: str, device: torch.device):
    """The context the forward and loss run in."""
    if precision in _AUTOCAST:
        return torch.autocast(device.type, dtype=_AUTOCAST[precision])
    return contextlib.nullcontext()


def grad_scaler(precision: str, device: torch.device) -> Optional[torch.amp.GradScaler]:
    """fairseq --fp16's dynamic loss scaling: start at 2^7 (--fp16-init-scale), halve and skip
    the update on inf/NaN gradients, double after 2,000 clean updates (torch's interval)."""
    if precision != "fp16":
        return None
    return torch.amp.GradScaler(device.type, init_scale=2.0**7)


def compile_cache(cache_dir: Path) -> None:
    """Inductor's kernels and FX graphs under the run's cache dir, so a resumed or repeated run
    reuses them instead of compiling again (an explicit environment setting wins)."""
    root = Path(cache_dir) / "torch_compile"
    if (
        _USER_INDUCTOR_DIR is None
    ):  # torch writes its /tmp default into the environment on first use
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(root / "inductor")
    os.environ.setdefault("TORCHINDUCTOR_FX_GRAPH_CACHE", "1")
    os.environ.setdefault("TORCHINDUCTOR_AUTOGRAD_CACHE", "1")


def compile_model(model: torch.nn.Module) -> torch.nn.Module:
    """A compiled wrapper that shares parameters with ``model``; callers keep ``model`` for
    state_dicts (no ``_orig_mod.`` prefixes), evaluation and decoding (dynamic shapes)."""
    return torch.compile(model, dynamic=None)


def pin(batch: Any) -> Any:
    if torch.is_tensor(batch):
        return batch.pin_memory()
    if isinstance(batch, dict):
        return {k: pin(v) for k, v in batch.items()}
    if isinstance(batch, (list, tuple)):
        return type(batch)(pin(v) for v in batch)
    return batch


class Prefetch:
    """batches[i] on the device; on CUDA it also pins and starts copying batches[i + 1], so the
    host prepares the next batch while the GPU runs this one (copies are non-blocking)."""

    def __init__(self, to_device, device: torch.device):
        self.to_device, self.cuda = to_device, device.type == "cuda"
        self._next: Optional[tuple] = None

    def get(self, batches, i: int):
        if not self.cuda:
            return self.to_device(batches[i])
        hit = (
            self._next
            if self._next is not None and self._next[0] is batches and self._next[1] == i
            else None
        )
        cur = hit[2] if hit else self.to_device(pin(batches[i]))
        self._next = (
            (batches, i + 1, self.to_device(pin(batches[i + 1]))) if i + 1 < len(batches) else None
        )
        return cur


def set_determinism(cfg, device: Optional[torch.device] = None) -> None:
    device = torch.device("cpu") if device is None else device
    torch.manual_seed(cfg.seed)
    if cfg.get("threads"):
        torch.set_num_threads(int(cfg.threads))
    set_matmul_precision(cfg.get("precision", default("precision")))
    if deterministic_for(cfg.deterministic, device):
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
        torch.use_deterministic_algorithms(True, warn_only=True)
        # torch's deterministic mode also fills every new tensor with NaN, so that a kernel that
        # reads memory before writing it shows up; no correct kernel does, so the fill buys no
        # determinism (bitwise resume is tested without it) and cost 2.7% of a CPU step
        torch.utils.deterministic.fill_uninitialized_memory = False
