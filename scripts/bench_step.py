"""Training-step overhead: normlab's Trainer._step against a bare PyTorch loop, same model and batch.

    python scripts/bench_step.py                          # RT, mini scale, the sweep's norms
    python scripts/bench_step.py --task sst2 --out results/bench/step.md

For each norm, one model is built from the task config and copied: the copy trains in a bare
loop (``loss = cross_entropy(model(tokens), labels); zero_grad; backward; Adam step; LR
scheduler step``), the original through ``Trainer._step`` (built as the runner builds it: its
optimizer, scheduler, the task's loss). Each round feeds the same batch to both, in alternating
order; the overhead is the median over rounds of normlab's time over the bare loop's, minus 1.
A third model with ``impl=reference`` norms shows what the fused norms save in a whole step,
a fourth with the native CPU kernels switched off what those kernels save over the tensor-op
fast paths (normlab/norms/native.py).

Also measured, with LayerNorm: a step with the gradient probe on (it runs every
``task.train.probe_every`` steps), collating a batch (``train_batches(...)[i]``, done by the fit
loop before each step), and deterministic algorithms (the runner's default) against torch's
default. Clock: benchkit.clock (one thread: its CPU time); glibc malloc pinned unless --malloc default.
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import os
import shutil
import sys
import tempfile
from pathlib import Path

import torch
import torch.nn.functional as F
from omegaconf import OmegaConf

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))
import benchkit as bk  # noqa: E402

SWEEP_NORMS = (
    "none,layernorm,layernorm_simple,detachnorm,detach_mean,detach_var,adanorm,rmsnorm,dyt"
)


def compose(task: str, norm: str, scale: str, data_dir: Path, cache: Path, extra=()):
    from normlab.config import compose_job

    return compose_job(
        [
            f"task={task}",
            f"norm={norm}",
            f"scale={scale}",
            "progress=false",
            f"paths.data_dir={data_dir}",
            f"paths.cache_dir={cache}",
            f"paths.root={cache}/runs",
            *extra,
        ]
    )


class Setup:
    """A task, a normlab Trainer and a bare copy of its model with a plain Adam + scheduler."""

    def __init__(self, job, task, cache: Path, impl: str):
        from normlab.config import train_config
        from normlab.norms import norm_factory
        from normlab.run.schedule import lr_lambda
        from normlab.run.trainer import Trainer

        self.t = train_config(OmegaConf.to_container(job.task.train, resolve=True))
        self.t_plain = dataclasses.replace(self.t, probe_every=0)
        torch.manual_seed(job.seed)
        model = task.build_model(
            norm_factory(job.norm.name, **{**(job.norm.options or {}), "impl": impl})
        )
        self.bare = copy.deepcopy(model).train()
        self.trainer = Trainer(
            task,
            model.train(),
            self.t_plain,
            job.seed,
            cache / f"run-{impl}",
            None,
            torch.device("cpu"),
            progress=False,
        )
        t = self.t
        self.opt = torch.optim.Adam(
            self.bare.parameters(), lr=t.lr, betas=tuple(t.betas), eps=t.adam_eps
        )
        self.sched = torch.optim.lr_scheduler.LambdaLR(
            self.opt,
            lr_lambda(
                t.schedule,
                t.warmup_steps,
                self.trainer.total_steps,
                t.warmup_init_ratio,
                t.min_lr_ratio,
            ),
        )

    def bare_step(self, batch):
        tokens, labels = batch
        loss = F.cross_entropy(self.bare(tokens), labels)
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        self.opt.step()
        self.sched.step()

    def normlab_step(self, batch, probe=False):
        self.trainer.t = dataclasses.replace(self.t, probe_every=1) if probe else self.t_plain
        self.trainer._step(batch)


def main(argv=None):
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--task", default="rt")
    ap.add_argument("--scale", default="mini")
    ap.add_argument("--norms", default=SWEEP_NORMS)
    ap.add_argument("--rounds", type=int, default=25)
    ap.add_argument(
        "--batches", type=int, default=8, help="distinct training batches cycled through"
    )
    ap.add_argument(
        "--threads", type=int, default=1, help="torch threads (the sweep runs one per job)"
    )
    ap.add_argument("--malloc", choices=["pinned", "default"], default="pinned")
    ap.add_argument("--data", default=os.environ.get("NORMLAB_DATA") or str(REPO / "data"))
    ap.add_argument("--out")
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    info = bk.machine()
    from normlab.norms import native

    info["normlab native kernels"] = native.describe()
    info["glibc malloc"] = (
        "pinned thresholds" if args.malloc == "pinned" and bk.pin_malloc() else "default"
    )
    tmp = Path(tempfile.mkdtemp(prefix="bench_step_"))
    try:
        report = measure(args, tmp, info)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(report)
    if args.out:
        bk.write(args.out, report)


def measure(args, tmp: Path, info: dict) -> str:
    from normlab.norms import native
    from normlab.run.accel import set_determinism
    from normlab.tasks import get_task_class

    rows, extra_rows, notes = [], [], []
    task = None
    for norm in args.norms.split(","):
        job = compose(args.task, norm, args.scale, Path(args.data), tmp)
        set_determinism(job)  # as the runner
        if task is None:
            task = get_task_class(job.task.name)(
                job.task, Path(job.paths.data_dir) / job.task.name, tmp
            )
            task.run_seed = job.seed
            task.setup()
            index = task.train_batches(0, job.seed)
            batches = [index[i] for i in range(min(args.batches, len(index)))]
            shape = tuple(batches[0][0].shape)
            notes.append(
                f"task {job.task.name} ({task.data_info.get('source')} data), scale {args.scale}, "
                f"model {dict(job.task.model)}, {len(batches)} batches cycled (first {shape})"
            )
        fused, ref = Setup(job, task, tmp, "fused"), Setup(job, task, tmp, "reference")
        ops = Setup(job, task, tmp, "fused")

        def ops_step(batch, ops=ops):
            with native.disabled():  # forward picks the path, backward follows it
                ops.normlab_step(batch)

        t = bk.rounds(
            {
                "bare": fused.bare_step,
                "normlab": fused.normlab_step,
                "reference": ref.normlab_step,
                "tensorops": ops_step,
            },
            batches,
            args.rounds,
        )
        over = bk.ratio(t["normlab"], t["bare"]) - 1
        rows.append(
            [
                f"`{norm}`",
                f"{bk.median(t['bare']) * 1e3:.2f}",
                f"{bk.median(t['normlab']) * 1e3:.2f}",
                f"{100 * over:+.1f}%" + (" **>5%**" if over > 0.05 else ""),
                f"{bk.ratio(t['reference'], t['normlab']):.2f}",
                f"{bk.ratio(t['tensorops'], t['normlab']):.2f}",
            ]
        )
        print(rows[-1], flush=True)
        if norm == "layernorm":
            extra_rows += extras(fused, index, batches, args.rounds, job)
    report = (
        "\n\n".join(
            [
                "# Training step: normlab loop vs a bare PyTorch loop",
                bk.machine_block(info)
                + f"\n- load average at end (1/5/15 min): {bk.load_average()}",
                __doc__.split("\n\n", 2)[2].strip(),
                "\n".join(f"- {n}" for n in notes),
                bk.markdown_table(
                    [
                        "norm",
                        "bare step ms",
                        "normlab step ms",
                        "normlab overhead",
                        "step with impl=reference / fused",
                        "step with tensor-op path / fused",
                    ],
                    rows,
                ),
                "### Around the step (LayerNorm model)",
                bk.markdown_table(["what", "cost"], extra_rows),
            ]
        )
        + "\n"
    )
    return report


def extras(s: Setup, index, batches, n: int, job) -> list:
    t = bk.rounds(
        {"plain": s.normlab_step, "probe": lambda b: s.normlab_step(b, probe=True)}, batches, n
    )
    probe = bk.ratio(t["probe"], t["plain"])
    every = s.t.probe_every
    out = [["a step with the gradient probe / a plain step", f"{probe:.2f}x"]]
    if every:
        out.append(
            [
                f"probe amortised over task.train.probe_every={every}",
                f"{100 * (probe - 1) / every:+.1f}%",
            ]
        )
    collate = bk.median([bk.timed(index.__getitem__, i) for i in range(min(len(index), 3 * n))])
    out.append(
        ["collating one batch / a plain step", f"{100 * collate / bk.median(t['plain']):.1f}%"]
    )
    # torch's deterministic mode with its NaN fill of new tensors (its default), as the runner
    # sets it (no fill: it buys no determinism), and off; interleaved in rotating order per round

    def mode(flag, fill):
        def step(batch):
            torch.use_deterministic_algorithms(flag, warn_only=True)
            torch.utils.deterministic.fill_uninitialized_memory = fill
            s.bare_step(batch)

        return step

    det = bk.rounds(
        {"fill": mode(True, True), "runner": mode(True, False), "off": mode(False, True)},
        batches,
        n,
    )
    torch.use_deterministic_algorithms(bool(job.deterministic), warn_only=True)
    torch.utils.deterministic.fill_uninitialized_memory = False
    out += [
        [
            "bare step with deterministic algorithms and torch's NaN fill / without either",
            f"{bk.ratio(det['fill'], det['off']):.3f}x",
        ],
        [
            "bare step with deterministic algorithms as the runner sets them (no fill) / without",
            f"{bk.ratio(det['runner'], det['off']):.3f}x",
        ],
    ]
    return out


if __name__ == "__main__":
    main()
