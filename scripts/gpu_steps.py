"""The paper models' training step on random batches in their shapes, for scripts/bench_gpu.py:
normlab's loop (Trainer._step with its bookkeeping) against a bare step of the same model, and
the loss after N steps eager against compiled. The task's own model and loss, without its data."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from types import SimpleNamespace

import torch
from omegaconf import OmegaConf

sys.path.insert(0, str(Path(__file__).parent))
from benchkit import median, rounds  # noqa: E402

from normlab.config import compose_job, train_config  # noqa: E402
from normlab.norms import norm_factory  # noqa: E402
from normlab.run import accel  # noqa: E402
from normlab.run.trainer import Trainer  # noqa: E402


def compose(task: str, norm: str, quick: bool):
    return compose_job(
        [
            f"task={task}",
            f"norm={norm}",
            "scale=smoke" if quick else "scale=paper",
            "paths.data_dir=/nonexistent",
            "paths.cache_dir=/tmp",
        ]
    )


def make_task(job, quick: bool):
    """The task's own model and loss, without its data."""
    from normlab.tasks import get_task_class

    cls = get_task_class(job.task.name)
    task = cls.__new__(cls)
    task.cfg, task.name = job.task, job.task.name
    if job.task.name == "enwik8":
        b, t, vocab = (
            (4, 32, 256)
            if quick
            else (int(job.task.data.batch_size), int(job.task.data.seq_len), 256)
        )
        gen = lambda g, n: tuple(torch.randint(0, vocab, (n, t), generator=g) for _ in range(2))  # noqa: E731
    else:
        vocab = 64 if quick else 10_152  # fairseq's joined IWSLT14 dictionary
        task.corpus = SimpleNamespace(src_vocab=range(vocab), tgt_vocab=range(vocab))
        task.pad, task.eos, task.max_pos = 1, 2, int(job.task.model.max_positions)
        b, t = (8, 8) if quick else (256, 32)
        gen = lambda g, n: tuple(torch.randint(3, vocab, (n, t), generator=g) for _ in range(3))  # noqa: E731
    return task, b, t, gen


def timed_steps(fn, n: int, warmup: int, device) -> float:
    """The median seconds of ``fn()`` over n steps after warmup ones."""
    return median(rounds({"step": lambda _: fn()}, [None], n, warmup, device)["step"])


def loop_vs_bare(task_name, norm, precision, args, device, compile=False):
    job = compose(task_name, norm, args.quick)
    task, b, t, gen = make_task(job, args.quick)
    g = torch.Generator().manual_seed(0)
    full = [gen(g, b) for _ in range(4)]
    uf = int(job.task.train.update_freq)
    micro = [
        tuple(x[i * b // uf : (i + 1) * b // uf] for x in batch)
        for batch in full
        for i in range(uf)
    ]
    task.train_batches = lambda epoch, seed: micro
    torch.manual_seed(0)
    accel.set_matmul_precision(precision)
    model = task.build_model(norm_factory(norm, **(job.norm.options or {})))
    tc = train_config(OmegaConf.to_container(job.task.train))
    with tempfile.TemporaryDirectory() as tmp:
        tr = Trainer(
            task,
            model,
            tc,
            1,
            Path(tmp),
            SimpleNamespace(log=lambda *a: None),
            device,
            progress=False,
            precision=precision,
            compile=compile,
        )
        i = [0]

        def loop_step():  # Trainer.fit's inner loop, without evaluation and checkpoints
            k = (i[0] * uf) % len(micro)
            tr._step(*(tr.prefetch.get(micro, j) for j in range(k, k + uf)))
            i[0] += 1
            if tr.state.step % tc.log_every == 0:
                tr._log_train({})

        loop = timed_steps(loop_step, args.steps, args.warmup, device)
        bare_model = tr.forward_model
        opt, sched = tr.opt, tr.sched
        dev_full = [tuple(x.to(device) for x in batch) for batch in full]

        def bare_step():
            with accel.autocast(precision, device):
                loss, _ = task.loss(bare_model, dev_full[i[0] % len(dev_full)])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
            i[0] += 1

        bare = timed_steps(bare_step, args.steps, args.warmup, device)
    return loop, bare, b * t


def agreement(task_name, norm, args, device):
    """Loss after --agree-steps bf16 steps, eager and compiled, from the same init and batches."""
    import torch._inductor.config as ic

    ic.fallback_random = True
    job = compose(task_name, norm, args.quick)
    task, b, t, gen = make_task(job, args.quick)
    g = torch.Generator().manual_seed(1)
    batches = [tuple(x.to(device) for x in gen(g, b)) for _ in range(args.agree_steps)]
    out = []
    for compile in (False, True):
        torch.manual_seed(0)
        model = task.build_model(norm_factory(norm)).to(device).train()
        fwd = accel.compile_model(model) if compile else model
        opt = torch.optim.Adam(model.parameters(), lr=1e-3)
        for batch in batches:
            with accel.autocast("bf16", device):
                loss, _ = task.loss(fwd, batch)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
        out.append(float(loss))
    return out
