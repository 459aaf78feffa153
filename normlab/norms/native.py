"""The C++ CPU kernels of ``csrc/`` (module.cpp says what they compute), built on first use, and their autograd Functions.

Why C++: on CPU every tensor op is a pass over memory, and AdaNorm, RMSNorm, ScaleNorm, DyT and
Derf need more of them than torch's one-pass LayerNorm kernels (results/bench/norms.md); one
kernel per direction per variant brings them to LayerNorm's cost. torch.compile was measured as
the alternative: 11-47 s of compilation per process on this machine, against runs of minutes.

The extension is compiled with the system's C++ compiler and ninja (20-90 s, once per machine;
`make install` does it) into ``$NORMLAB_EXT_DIR`` (default ``$XDG_CACHE_HOME/normlab/torch_extensions``,
i.e. ``~/.cache/...``), one build per source, CPU instruction set, compiler, torch and Python, shared
by every checkout and virtual environment that match (native_build.py). Where it
can't be built, or with ``NORMLAB_NATIVE=0``, ``load()`` returns None and the tensor-op fast
paths of ``fused.py`` / ``fused_elementwise.py`` run instead (they also serve CUDA and half
precision); a failed build says why in one warning.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
import warnings
from pathlib import Path

import torch
from torch.autograd.function import once_differentiable

from . import native_build

_CSRC = Path(__file__).with_name("csrc")
_ARCH = {"AVX512": "-march=x86-64-v4", "AVX2": "-march=x86-64-v3"}  # what torch itself found
_state: dict = {}

TANH, ERF = 0, 1


def build_seconds(since: float = 0.0) -> float:
    """Seconds this process spent building the kernels (or waiting for another process's build)
    after the time ``since`` (time.monotonic()): a run leaves them out of its wall time."""
    began, spent = _state.get("build", (0.0, 0.0))
    return spent if began >= since else 0.0


def build_dir() -> Path:
    if os.environ.get("NORMLAB_EXT_DIR"):
        return Path(os.environ["NORMLAB_EXT_DIR"])
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "normlab" / "torch_extensions"


def load():
    """The compiled module, or None (with one warning saying why)."""
    if "mod" in _state:
        return _state["mod"]
    _state["mod"] = None
    if os.environ.get("NORMLAB_NATIVE", "1") == "0":
        return None
    try:
        # the ninja that pip installed sits beside this Python, which may not be on PATH
        bindir = os.path.dirname(sys.executable)
        if bindir not in os.environ.get("PATH", "").split(os.pathsep):
            os.environ["PATH"] = bindir + os.pathsep + os.environ.get("PATH", "")

        cap = torch.backends.cpu.get_cpu_capability()
        flags = ["-O3", "-fopenmp", *([_ARCH[cap]] if cap in _ARCH else [])]
        began = time.monotonic()
        _state["mod"], spent = native_build.load(
            f"normlab_norms_{cap.lower()}", _CSRC, build_dir(), cap, flags
        )
        _state["build"] = (began, spent)
    except Exception as exc:  # no compiler, no headers, a read-only home: run the tensor-op paths
        warnings.warn(
            f"normlab: native CPU norm kernels unavailable ({type(exc).__name__}: "
            f"{str(exc).strip().splitlines()[-1] if str(exc).strip() else ''}); using "
            "the slower tensor-op fast paths. Set NORMLAB_NATIVE=0 to silence this.",
            RuntimeWarning,
            stacklevel=3,
        )
    return _state["mod"]


@contextlib.contextmanager
def disabled():
    """Norms built inside run the tensor-op fast paths (tests and benchmarks compare both)."""
    _state["off"] = _state.get("off", 0) + 1
    try:
        yield
    finally:
        _state["off"] -= 1


def describe() -> str:
    """One line for benchmark reports: whether the kernels are built, and for which CPU."""
    if load() is None:
        return "unavailable (tensor-op fast paths)"
    cap = torch.backends.cpu.get_cpu_capability()
    return f"built for {cap} ({_ARCH.get(cap, 'no -march')}, -O3)"


def usable(x: torch.Tensor, *params) -> bool:
    """Whether the kernels serve this call: float32/64 CPU tensors and a built extension."""
    if (
        _state.get("off")
        or x.device.type != "cpu"
        or x.dtype not in (torch.float32, torch.float64)
        or x.shape[-1] == 0
    ):
        return False
    if any(p is not None and (p.device.type != "cpu" or p.dtype != x.dtype) for p in params):
        return False
    return load() is not None


class RowNorm(torch.autograd.Function):
    """out = scale y (1 - k y) w + b with y = (x - m)/sigma (see csrc/module.cpp)."""

    @staticmethod
    def forward(ctx, x, w, b, scale, center, kind, dn, eps, k, detach_mean, detach_var):
        # scale: a float (AdaNorm's C) or a 0-d/1-element tensor (ScaleNorm's learned g)
        s = float(scale) if isinstance(scale, torch.Tensor) else scale
        y, mean, rstd, coef = _state["mod"].row_norm_fwd(x, w, b, center, kind, dn, eps, s, k)
        learned = isinstance(scale, torch.Tensor)
        ctx.args = (s, k, detach_mean, detach_var, learned)
        if detach_var and w is None and k == 0 and not learned:
            ctx.save_for_backward(rstd)  # dx = s r (g - mean(g)) or s r g: one number per row
        else:
            ctx.save_for_backward(x, mean, rstd, coef, w, scale if learned else None)
        return y

    @staticmethod
    @once_differentiable
    def backward(ctx, g):
        s, k, detach_mean, detach_var, learned = ctx.args
        needs = ctx.needs_input_grad
        if len(ctx.saved_tensors) == 1:
            dx = _state["mod"].detached_grad(g, ctx.saved_tensors[0], not detach_mean)
            return (dx.mul_(s) if s != 1.0 else dx,) + (None,) * 10
        x, mean, rstd, coef, w, scale = ctx.saved_tensors
        need_dscale = learned and needs[3]
        dx, dw, db, dscale = _state["mod"].row_norm_bwd(
            g,
            x,
            mean,
            rstd,
            coef,
            w,
            detach_mean,
            detach_var,
            s,
            k,
            needs[0],
            needs[1] and w is not None,
            needs[2],
            need_dscale,
        )
        if need_dscale:
            dscale = dscale.reshape(scale.shape).to(scale.dtype)
        return dx, dw, db if needs[2] else None, dscale, None, None, None, None, None, None, None


def row_norm(
    x,
    w=None,
    b=None,
    scale=1.0,
    center=True,
    sigma="paper",
    eps=1e-5,
    k=0.0,
    detach_mean=False,
    detach_var=False,
):
    """sigma over ss = sum((x - m)^2) of n features: "paper" sqrt(ss/n + eps) (torch's LayerNorm
    and RMSNorm), "official" std + eps (unbiased when centred, as lancopku/AdaNorm; the RMS for
    RMSNorm, as bzhangGo/rmsnorm), "clamped" max(||x - m||, eps) (ScaleNorm)."""
    n = x.shape[-1]
    kind, dn = {"paper": (0, n), "official": (1, n - 1 if center else n), "clamped": (2, 1)}[sigma]
    # without centring m = 0 is a constant: no mean term in backward, as when mu is detached
    return RowNorm.apply(
        x.contiguous(),
        w,
        b,
        scale,
        center,
        kind,
        float(dn),
        eps,
        k,
        detach_mean or not center,
        detach_var,
    )


class Pointwise(torch.autograd.Function):
    """out = w f(alpha x + shift) + b, f = tanh (DyT) or erf (Derf)."""

    @staticmethod
    def forward(ctx, x, fn, alpha, shift, w, b):
        a = float(alpha)
        s = float(shift) if shift is not None else 0.0
        ctx.fn, ctx.a, ctx.s = fn, a, s
        ctx.save_for_backward(x, alpha, shift, w)
        return _state["mod"].pointwise_fwd(x, fn, a, s, w, b)

    @staticmethod
    @once_differentiable
    def backward(ctx, g):
        x, alpha, shift, w = ctx.saved_tensors
        needs = ctx.needs_input_grad
        dx, dw, db, dalpha, dshift = _state["mod"].pointwise_bwd(
            g, x, ctx.fn, ctx.a, ctx.s, w, needs[0]
        )
        return (
            dx,
            None,
            dalpha.reshape(alpha.shape).to(alpha.dtype) if needs[2] else None,
            dshift.reshape(shift.shape).to(shift.dtype) if shift is not None and needs[3] else None,
            dw if w is not None and needs[4] else None,
            db if needs[5] else None,
        )


def pointwise(x, fn, alpha, shift=None, w=None, b=None):
    return Pointwise.apply(x.contiguous(), fn, alpha, shift, w, b)
