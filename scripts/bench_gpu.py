"""GPU speed: normlab's training loop against a bare step of the same model, per norm
and precision, for the IWSLT14 and enwik8 paper models; the norm layers' fwd+bwd against
torch.nn.LayerNorm; compiled against eager training. Writes results/bench/gpu.md.

    python scripts/bench_gpu.py                   # on a GPU; about 6-9 minutes, stops at --budget-s
    python scripts/bench_gpu.py --quick           # tiny shapes, any device (the tests run it on CPU)

Batches are random tokens in the paper configs' shapes (timing does not depend on the text):
IWSLT14 256 x 32 target tokens per update (8,192; the loop runs the preset's 2 x 4,096-token
micro-batches), enwik8 22 x 512 bytes. "loop" is Trainer._step with prefetch and the
logging-step bookkeeping of Trainer.fit (the lean CUDA loop); "bare" is forward, loss,
backward, Adam and the scheduler on the whole batch, nothing else. Times are medians over steps
after warm-up, bracketed by device synchronisation. The norm table times ``y = norm(x)`` then
``autograd.grad(y, [x, *params], g)`` per variant, divided by torch.nn.LayerNorm's in the same
round. "compiled vs eager" trains the same model from the same init on the same batches for
--agree-steps steps in bf16 with inductor's fallback_random (the same dropout masks as eager)
and reports both losses: the check of "AdaNorm + compile 11.9 vs eager 9.0 after 25 steps".
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parent))
from benchkit import machine, machine_block, markdown_table, ratio, rounds, write  # noqa: E402
from gpu_steps import agreement, loop_vs_bare  # noqa: E402

from normlab.norms import NORMS as NORM_REGISTRY  # noqa: E402
from normlab.norms import build_norm  # noqa: E402

NORMS = [n for n in NORM_REGISTRY if n not in ("none", "batchnorm")]
FULL_SPLIT_FILL = (
    0.91  # measured: bucketing fills ~91% of an 8,192-token budget on the 160K-pair split
)


def norm_table(args, device):
    """Each round times every variant once, in rotating order; a ratio is the median over rounds
    of the variant's time / torch.nn.LayerNorm's time in the same round (load hits both alike)."""
    shapes = (
        [(256, 64, torch.float32), (256, 64, torch.bfloat16)]
        if args.quick
        else [
            (16384, 1024, torch.float32),
            (16384, 1024, torch.bfloat16),
            (65536, 512, torch.bfloat16),
        ]
    )
    names = ["torch.nn.LayerNorm"] + NORMS
    cols = []
    for n, d, dtype in shapes:
        x = torch.randn(n, d, device=device, dtype=dtype, requires_grad=True)
        gy = torch.randn(n, d, device=device, dtype=dtype)
        mods = {
            k: (torch.nn.LayerNorm(d) if k.startswith("torch") else build_norm(k, d)).to(
                device, dtype
            )
            for k in names
        }
        fns = {
            k: lambda xg, mod=mod: torch.autograd.grad(
                mod(xg[0]), [xg[0], *mod.parameters()], xg[1]
            )
            for k, mod in mods.items()
        }
        times = rounds(fns, [(x, gy)], args.norm_reps, 3, device)
        cols.append({k: ratio(times[k], times[names[0]]) for k in names})
    rows = [[f"`{k}`"] + [f"{c[k]:.2f}" for c in cols] for k in names]
    return markdown_table(
        ["variant"] + [f"{n}x{d} {str(dt).split('.')[-1]}" for n, d, dt in shapes], rows
    )


def main(argv=None):
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--quick", action="store_true", help="tiny shapes and models: any device, seconds"
    )
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--norms", default=",".join(NORMS))
    ap.add_argument("--precisions", default="fp32,bf16")
    ap.add_argument(
        "--compile-norms", default="layernorm,adanorm", help="'' = no torch.compile at all"
    )
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--norm-reps", type=int, default=20)
    ap.add_argument("--agree-steps", type=int, default=25)
    ap.add_argument(
        "--budget-s", type=float, default=540, help="skip what is left after this many seconds"
    )
    ap.add_argument("--out", default=None, help="default results/bench/gpu.md (none with --quick)")
    args = ap.parse_args(argv)
    if args.quick:
        # tiny shapes time in microseconds, so one descheduling moves a round: 9 rounds keep the median
        args.steps, args.warmup, args.norm_reps, args.agree_steps = 2, 1, 9, 2
    device = torch.device(args.device)
    if args.quick and device.type == "cpu":
        # a microsecond op split over intra-op threads waits for any of them that another process
        # descheduled: 100x outliers on a loaded machine, which no count of rounds removes
        torch.set_num_threads(1)
    start, skipped = time.time(), []
    info = machine()
    norms, precisions = args.norms.split(","), args.precisions.split(",")
    compile_norms = [n for n in args.compile_norms.split(",") if n]
    sections = [
        "# GPU: training loop, norm layers, compile",
        machine_block(info),
        __doc__.split("\n\n", 2)[2].strip(),
    ]
    for task_name in ("iwslt14_de_en", "enwik8"):
        rows, ln = [], {}
        runs = [(n, p, False) for p in precisions for n in norms] + [
            (n, "bf16", True) for n in compile_norms
        ]
        for norm, precision, compile in runs:
            if time.time() - start > args.budget_s:
                skipped.append(f"{task_name} {norm} {precision}{' compile' if compile else ''}")
                continue
            loop, bare, tokens = loop_vs_bare(task_name, norm, precision, args, device, compile)
            key = (precision, compile)
            if norm == "layernorm":
                ln.setdefault(key, loop)
            rows.append(
                [
                    f"`{norm}`",
                    precision + (" + compile" if compile else ""),
                    f"{loop * 1e3:.1f}",
                    f"{bare * 1e3:.1f}",
                    f"{loop / bare:.2f}",
                    f"{tokens / loop:,.0f}",
                    f"{loop / ln[key]:.2f}" if key in ln else "n/a",
                ]
            )
            print(rows[-1], flush=True)
        sections += [
            f"## {task_name}: loop vs bare step (paper model)",
            markdown_table(
                [
                    "norm",
                    "precision",
                    "loop ms/step",
                    "bare ms/step",
                    "loop / bare",
                    "tokens/s (loop)",
                    "loop / LayerNorm's",
                ],
                rows,
            ),
        ]
        if task_name == "iwslt14_de_en" and ln:
            best = min(ln.values())
            steps = 90_000 * 5 * 3  # 5 norms x 3 seeds x 90K updates
            sections.append(
                f"- fastest LayerNorm loop: {best * 1e3:.1f} ms per 8,192-token update; on the full "
                f"train split (~{FULL_SPLIT_FILL:.0%} filled) {FULL_SPLIT_FILL * 8192 / best:,.0f} "
                f"tokens/s; the paper grid (5 norms x 3 seeds x 90K updates) ~{steps * best / 3600:.1f} "
                "GPU-hours on one such device"
            )
    if time.time() - start <= args.budget_s:
        sections += [
            "## Norm layers: fwd+bwd time / torch.nn.LayerNorm's (impl=fused)",
            norm_table(args, device),
        ]
    else:
        skipped.append("norm table")
    agree = []
    for norm in compile_norms:
        if time.time() - start > args.budget_s:
            skipped.append(f"agreement {norm}")
            continue
        eager, compiled = agreement("iwslt14_de_en", norm, args, device)
        agree.append([f"`{norm}`", f"{eager:.4f}", f"{compiled:.4f}", f"{compiled - eager:+.4f}"])
    if agree:
        sections += [
            f"## Compiled vs eager: IWSLT14 model, bf16, loss after {args.agree_steps} steps",
            markdown_table(["norm", "eager", "compiled", "difference"], agree),
        ]
    sections.append(
        f"- wall time {time.time() - start:.0f} s"
        + (f"; skipped (over --budget-s): {skipped}" if skipped else "")
    )
    report = "\n\n".join(sections) + "\n"
    print(report)
    out = args.out or (None if args.quick else "results/bench/gpu.md")
    if out:
        write(out, report)
    return report


if __name__ == "__main__":
    main()
