"""Forward+backward time and peak memory of every norm variant, as ratios to torch.nn.LayerNorm.

    python scripts/bench_norms.py                  # 16384x512, 4096x1024, 4096x64; fp32; CPU (+CUDA)
    python scripts/bench_norms.py --out results/bench/norms.md

Each round times every candidate once, in a shuffled order, so that load from other processes
hits all of them alike; a candidate's time ratio is the median over rounds of its time divided by
torch.nn.LayerNorm's time in the same round. One fwd+bwd is ``y = norm(x)`` then
``torch.autograd.grad(y, [x, *params], g)``. "fused" is normlab's default fast path (on CPU
the C++ kernels of normlab/norms/csrc/ when they are built, see "native kernels"
above; on CUDA and without them the tensor-op paths), "tensor-op" that tensor-op path forced
(fused.py / fused_elementwise.py), "reference" the plain autograd math (impl="reference");
LayerNorm with paper numerics is torch's own kernel in both fast paths. ``name[official]`` rows use
numerics="official" (unbiased std, divided by std + eps, as lancopku/AdaNorm's code).

With one torch thread the clock is the CPU time of the benchmarking thread, so time spent
descheduled by other processes is not counted (wall time varies 5x on a shared machine).
glibc's malloc thresholds are pinned (mmap above 32 MiB, no trimming; --malloc default keeps
glibc's adaptive ones), so whether a freed 16 MiB block is reused does not depend on what ran
before. The shapes then measure three regimes: 16384x512 fp32 tensors are exactly 32 MiB, above
glibc's largest mmap threshold, so every full-size tensor is freshly mapped and page faults make
the number of allocations count; 4096x1024 reuses memory and measures passes over memory;
4096x64 is the size of the mini-scale text models' activations, where per-call overhead counts.

Peak memory is the most bytes held, at any point of one fwd+bwd, by tensors created during it
(the output, what autograd saves, gradients, temporaries), not counting x, g and the parameters.
On CPU it is tracked per operator with a dispatch mode, so it is exact and noise-free but does
not see scratch space inside a kernel (the native kernels' per-thread column sums: threads x
(2-3 x features) numbers); on CUDA it is torch.cuda.max_memory_allocated.
The "fused vs reference" column checks the fast path against the reference: the largest
difference of output or input gradient, relative to the largest magnitude of the reference's.
On a shared machine (see the load average) repeated runs have moved single ratios by up to 0.1
at the two large shapes and 0.25 at 4096x64; compare rows of one table, not across tables.
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

import torch
from torch import nn
from torch.multiprocessing.reductions import StorageWeakRef
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

from normlab.norms import NORMS as NORM_REGISTRY
from normlab.norms import build_norm, native

sys.path.insert(0, str(Path(__file__).parent))
import benchkit as bk  # noqa: E402

# every registered norm with learned or normalizing work to time (not the identity, not BatchNorm)
VARIANTS = [n for n in NORM_REGISTRY if n not in ("none", "batchnorm")]
OFFICIAL = [
    "layernorm",
    "layernorm_simple",
    "detachnorm",
    "detach_mean",
    "detach_var",
    "adanorm",
    "rmsnorm",
]  # the variants with a numerics option


class PeakMemory(TorchDispatchMode):
    """Live bytes of tensor storages created under the mode, sampled after every operator."""

    def __init__(self):
        super().__init__()
        self.live: dict[int, tuple[StorageWeakRef, int]] = {}
        self.current = self.peak = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for key, (ref, nbytes) in list(self.live.items()):
            if ref.expired():
                del self.live[key]
                self.current -= nbytes
        # views, in-place and out= results share an input's storage: not new memory
        inputs = {
            t.untyped_storage().data_ptr()
            for t in tree_flatten((args, kwargs))[0]
            if isinstance(t, torch.Tensor)
        }
        for t in tree_flatten(out)[0]:
            if isinstance(t, torch.Tensor) and t.device.type == "cpu":
                st = t.untyped_storage()
                if st.data_ptr() not in self.live and st.data_ptr() not in inputs and st.nbytes():
                    self.live[st.data_ptr()] = (StorageWeakRef(st), st.nbytes())
                    self.current += st.nbytes()
        self.peak = max(self.peak, self.current)
        return out


def fwd_bwd(module, x, g):
    y = module(x)
    grads = torch.autograd.grad(y, [x, *module.parameters()], g)
    return y, grads


def peak_bytes(module, x, g) -> int:
    if x.is_cuda:
        torch.cuda.synchronize()
        base = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
        out = fwd_bwd(module, x, g)
        torch.cuda.synchronize()
        del out
        return torch.cuda.max_memory_allocated() - base
    with PeakMemory() as pm:
        out = fwd_bwd(module, x, g)
        del out
    return pm.peak


class TensorOps(nn.Module):
    """A fused norm forced onto its tensor-op fast path (what runs without the native kernels);
    the path is chosen in forward, and backward follows it."""

    def __init__(self, m: nn.Module):
        super().__init__()
        self.m = m

    def forward(self, x):
        with native.disabled():
            return self.m(x)


def candidates(d: int, device, dtype) -> dict[str, nn.Module]:
    """Every variant three ways: fused (the default: native kernels on CPU when built), its
    tensor-op fast path, and the reference math."""
    mods = {"torch.nn.LayerNorm": nn.LayerNorm(d), "torch.nn.RMSNorm": nn.RMSNorm(d)}
    rows = [(n, n, {}) for n in VARIANTS] + [
        (f"{n}[official]", n, {"numerics": "official"}) for n in OFFICIAL
    ]
    for key, name, opts in rows:
        mods[f"{key}/fused"] = build_norm(name, d, **opts)
        mods[f"{key}/tensorops"] = TensorOps(build_norm(name, d, **opts))
        mods[f"{key}/reference"] = build_norm(name, d, impl="reference", **opts)
    gen = torch.Generator().manual_seed(0)
    for key, m in mods.items():  # non-default parameters, the same for every impl of a variant
        if key.endswith(("/tensorops", "/reference")):
            src = mods[key.rsplit("/", 1)[0] + "/fused"].state_dict()
            (m.m if isinstance(m, TensorOps) else m).load_state_dict(src)
            continue
        with torch.no_grad():
            for p in m.parameters():
                p.copy_(1.0 + 0.2 * torch.randn(p.shape, generator=gen))
    return {k: m.to(device=device, dtype=dtype) for k, m in mods.items()}


def max_rel_diff(a_mod, b_mod, x, g) -> float:
    ya, ga = fwd_bwd(a_mod, x, g)
    yb, gb = fwd_bwd(b_mod, x, g)
    return max(
        ((ya - yb).abs().max() / yb.abs().max()).item(),
        ((ga[0] - gb[0]).abs().max() / gb[0].abs().max()).item(),
    )


def bench_shape(rows: int, d: int, device, dtype, rounds: int, seed: int) -> tuple[str, list]:
    mods = candidates(d, device, dtype)
    gen = torch.Generator().manual_seed(seed)
    # a non-zero mean and spread per row, as residual-stream activations have
    x = (
        (torch.randn(rows, d, generator=gen) * 2 + 0.5)
        .to(device=device, dtype=dtype)
        .requires_grad_()
    )
    g = torch.randn(rows, d, generator=gen).to(device=device, dtype=dtype)
    names = list(mods)
    times = {n: [] for n in names}
    order_rng = random.Random(seed)
    for r in range(rounds + 2):  # two warm-up rounds
        order_rng.shuffle(names)
        for n in names:
            dt = bk.timed(fwd_bwd, mods[n], x, g, device=x.device)
            if r >= 2:
                times[n].append(dt)
    base = "torch.nn.LayerNorm"
    ratio = {n: bk.ratio(times[n], times[base]) for n in mods}
    mem = {n: peak_bytes(mods[n], x, g) for n in mods}

    def cell(n):
        return f"{ratio[n]:.2f}", f"{mem[n] / mem[base]:.2f}"

    rows_out = []
    for n in ["torch.nn.LayerNorm", "torch.nn.RMSNorm"]:
        rows_out.append(
            [
                f"`{n}`",
                *cell(n),
                "",
                "",
                "",
                "",
                "",
                f"{bk.median(times[n]) * 1e3:.3g}",
                f"{mem[n] / 2**20:.3g}",
            ]
        )
    for n in [k[: -len("/fused")] for k in mods if k.endswith("/fused")]:
        fused, ops, ref = f"{n}/fused", f"{n}/tensorops", f"{n}/reference"
        diff = max_rel_diff(mods[fused], mods[ref], x, g)
        flag = " **>1.25**" if ratio[fused] > 1.25 else ""
        rows_out.append(
            [
                f"`{n}`",
                cell(fused)[0] + flag,
                cell(fused)[1],
                *cell(ops),
                *cell(ref),
                f"{diff:.0e}",
                f"{bk.median(times[fused]) * 1e3:.3g}",
                f"{mem[fused] / 2**20:.3g}",
            ]
        )
    header = [
        "variant",
        "fused time ×LN",
        "fused peak mem ×LN",
        "tensor-op time ×LN",
        "tensor-op peak mem ×LN",
        "reference time ×LN",
        "reference peak mem ×LN",
        "fused vs reference",
        "fused ms (median)",
        "fused peak MiB",
    ]
    title = (
        f"### {rows}×{d} {str(dtype).replace('torch.', '')} on {device}, {rounds} rounds, "
        f"clock: {bk.clock(device).__name__}"
    )
    return f"{title}\n\n{bk.markdown_table(header, rows_out)}\n", [ratio, mem]


def main(argv=None):
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--shapes", default="16384x512,4096x1024,4096x64", help="rows x features, comma-separated"
    )
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument(
        "--threads",
        type=int,
        default=1,
        help="torch CPU threads (1: the sweep runs one thread per job; 0: torch's default)",
    )
    ap.add_argument("--devices", default="cpu,cuda", help="cuda is skipped when unavailable")
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--malloc", choices=["pinned", "default"], default="pinned")
    ap.add_argument("--out", help="also write the Markdown report here")
    args = ap.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    info = bk.machine()
    info["normlab native kernels"] = native.describe()
    info["glibc malloc"] = (
        "pinned thresholds" if args.malloc == "pinned" and bk.pin_malloc() else "default"
    )
    dtype = getattr(torch, args.dtype)
    devices = [d for d in args.devices.split(",") if d != "cuda" or torch.cuda.is_available()]
    parts = []
    for device in devices:
        for shape in args.shapes.split(","):
            rows, d = (int(v) for v in shape.lower().split("x"))
            text, _ = bench_shape(rows, d, torch.device(device), dtype, args.rounds, args.seed)
            print(text, flush=True)
            parts.append(text)
    info["load average at end (1/5/15 min)"] = bk.load_average()
    report = (
        "# Norm layers: forward+backward time and peak memory vs torch.nn.LayerNorm\n\n"
        + bk.machine_block(info)
        + "\n\n"
        + __doc__.split("\n\n", 2)[2]
        + "\n"
        + "\n".join(parts)
    )
    if args.out:
        bk.write(args.out, report)


if __name__ == "__main__":
    main()
