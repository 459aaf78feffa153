#!/usr/bin/env python
"""normlab against fairseq-train in updates per second, on the same data and model.

    make bench-fairseq                          # both configs -> results/bench/fairseq.md
    python scripts/bench_fairseq.py --configs mini --reps 1 --updates 8 --skip 2   # does it run

The data is normlab's mini IWSLT14 corpus written out and binarized for fairseq exactly as
scripts/compare_fairseq.py does (same pairs, same ids, same parameter count). Each config is
timed two ways: (a) both systems fed the identical batches (normlab's first-epoch token batches,
in one order: fairseq's batch_by_size is replaced, --curriculum keeps the order), and (b) each
system batching on its own (target tokens per second is then the fair unit). Every measurement
is one process of the system's own command line, one thread, fp32, CPU (scripts/
bench_fairseq_worker.py wraps the update step to note when each update starts); the processes
alternate, normlab then fairseq, then fairseq then normlab, and every ratio is one of such a pair
of neighbours, since this machine's speed drifts between minutes. ``--device cuda`` runs both on
the GPU with bf16 autocast (fairseq's --bf16). An update's time is the interval between two
update starts (the whole loop: collate, step, logging), the first ``--skip`` updates left out;
start-up is the time from launching the process to its first update.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))

from bench_fairseq_table import HOW, table, verdicts  # noqa: E402
from benchkit import machine, machine_block  # noqa: E402
from fairseq_recipe import (  # noqa: E402
    RECIPES,
    TASK,
    compose,
    export,
    fairseq_flags,
    job_env,
    preprocess,
)

WORKER = REPO / "scripts" / "bench_fairseq_worker.py"
# config -> (model overrides on the mini recipe, updates timed, updates skipped, repetitions).
# One process's speed drifts by 10-20% between minutes on this shared machine, so a ratio needs
# many pairs of neighbouring processes; 6+6 takes about 70 s a process.
CONFIGS = {
    "mini": ([], 60, 10, 8),
    "6+6": (
        ["task.model.layers=6", "task.model.d_model=512", "task.model.ffn_dim=1024"],
        16,
        4,
        4,
    ),
}


def timed(system, python, args, env, out: Path, updates: int, batches=None) -> dict:
    env = {**env, "BENCH_OUT": str(out), "BENCH_UPDATES": str(updates)}
    if batches:
        env["BENCH_BATCHES"] = str(batches)
    env["BENCH_T0"] = repr(time.time())
    run = subprocess.run(
        [python, str(WORKER), system, *args],
        env=env,
        cwd=out.parent,
        capture_output=True,
        text=True,
    )
    if run.returncode or not out.exists():
        raise SystemExit(
            f"{system} failed ({run.returncode}):\n{(run.stdout + run.stderr)[-3000:]}"
        )
    rec = json.loads(out.read_text())
    out.unlink()
    return rec


def summarize(rec: dict, skip: int) -> dict:
    starts = rec["starts"]
    steps = [b - a for a, b in zip(starts[skip:-1], starts[skip + 1 :])]
    tokens = rec["target_tokens"][skip:-1]
    return {
        "s_per_update": statistics.median(steps),
        "target_tokens_per_s": sum(tokens) / sum(steps),
        "target_tokens_per_update": statistics.mean(tokens),
        "padding_share": 1 - sum(rec["real"][skip:-1]) / sum(rec["padded"][skip:-1]),
        "startup_s": starts[0],
    }


def bench(name, a, work: Path, env: dict, data_bin: Path, batches: Path) -> dict:
    extra, updates, skip, reps = CONFIGS[name]
    updates, skip, reps = a.updates or updates, a.skip or skip, a.reps or reps
    overrides = [*RECIPES["mini"][0], "norm=layernorm", *extra]
    cfg = compose(overrides, a.data_dir, work / "cache")
    flags = [
        *fairseq_flags(cfg, updates + 1000),  # the worker ends the run
        "--disable-validation",
        "--curriculum",
        "1000",  # no shuffling of the batch order
        "--seed",
        "1",
        "--log-interval",
        "1000",
    ]
    if a.device == "cuda":  # the GPU mode: bf16 autocast in both, fairseq's --bf16
        flags = [f for f in flags if f != "--cpu"] + ["--bf16"]
    normlab_args = [
        f"task={TASK}",
        *overrides,
        "seed=1",
        *(["device=cuda", "precision=bf16"] if a.device == "cuda" else ["threads=1"]),
        "progress=false",
        f"task.train.max_steps={updates + 1000}",
        f"task.train.eval_every={updates + 1000}",
        f"task.train.log_every={updates + 1000}",
        f"paths.root={work / 'runs' / name}",
        "resume=restart",
    ]
    res = {"identical": {"normlab": [], "fairseq": []}, "own": {"normlab": [], "fairseq": []}}
    for rep in range(reps):
        for mode, given in (("identical", batches), ("own", None)):
            # A B, then B A: a drift of the machine's speed within a pair of repetitions cancels
            order = ("normlab", "fairseq") if rep % 2 == 0 else ("fairseq", "normlab")
            for system in order:
                python, args = (
                    (a.normlab_python, normlab_args)
                    if system == "normlab"
                    else (a.fairseq_python, [str(data_bin), *flags])
                )
                rec = timed(system, python, args, env, work / f"{system}.json", updates, given)
                res[mode][system].append(summarize(rec, skip))
                s = res[mode][system][-1]
                print(
                    f"  {name} {mode} rep {rep + 1} {system}: {s['s_per_update']:.4f} s/update, "
                    f"{s['target_tokens_per_s']:.0f} target tokens/s, start-up {s['startup_s']:.2f} s",
                    flush=True,
                )
    return res


def model_shape(name: str, data_dir: Path, work: Path) -> str:
    """The model a config times, read from its composed config (the mini preset changes)."""
    m = compose(
        [*RECIPES["mini"][0], "norm=layernorm", *CONFIGS[name][0]], data_dir, work / "cache"
    )
    m = m.task.model
    dec = m.decoder_layers or m.layers
    return f"{name}: {m.layers}+{dec} layers, d {m.d_model}, FFN {m.ffn_dim}, {m.heads} heads"


def write_batches(cfg, path: Path, n: int) -> Path:
    """normlab's token batches of the first epochs (seed 1), as positions in the exported order."""
    from normlab.tasks import get_task_class

    task = get_task_class(TASK)(
        cfg.task, Path(cfg.paths.data_dir) / TASK, Path(cfg.paths.cache_dir)
    )
    task.setup()
    position = {int(i): p for p, i in enumerate(task.train_index.tolist())}
    out, epoch = [], 0
    while len(out) < n:
        out += [[position[int(i)] for i in b] for b in task.train_batches(epoch, 1).index_batches]
        epoch += 1
    path.write_text(json.dumps(out[:n]))
    return path


def main(argv=None) -> int:
    p = argparse.ArgumentParser(
        description=__doc__.splitlines()[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--configs", default=",".join(CONFIGS), help=f"of {sorted(CONFIGS)}")
    p.add_argument(
        "--reps", type=int, default=0, help="repetitions of each measurement (0: the config's)"
    )
    p.add_argument("--updates", type=int, default=0, help="updates timed (0: the config's)")
    p.add_argument("--skip", type=int, default=0, help="first updates left out (0: the config's)")
    p.add_argument(
        "--data-dir", type=Path, default=Path(os.environ.get("NORMLAB_DATA") or REPO / "data")
    )
    p.add_argument(
        "--device",
        choices=("cpu", "cuda"),
        default="cpu",
        help="cpu: fp32, one thread; cuda: bf16 autocast on the GPU in both systems",
    )
    p.add_argument("--normlab-python", default=sys.executable)
    p.add_argument("--fairseq-python", default=str(REPO / ".venv-fairseq" / "bin" / "python"))
    p.add_argument("--work", type=Path, default=REPO / "runs" / "bench_fairseq")
    p.add_argument("--out", type=Path, help="write the table here (results/bench/fairseq.md)")
    a = p.parse_args(argv)
    a.data_dir = a.data_dir.resolve()
    a.normlab_python, a.fairseq_python = (
        os.path.abspath(x) if os.sep in x else x for x in (a.normlab_python, a.fairseq_python)
    )
    if not Path(a.fairseq_python).exists():
        raise SystemExit(f"no fairseq environment at {a.fairseq_python}: run make fairseq-env")
    if a.device == "cuda":
        import torch

        if not torch.cuda.is_available():
            raise SystemExit("--device cuda: torch sees no CUDA device here; use --device cpu")
    info = machine()
    work = a.work.resolve()
    work.mkdir(parents=True, exist_ok=True)
    env = job_env(a.data_dir, work / "cache")
    cfg = compose([*RECIPES["mini"][0], "norm=layernorm"], a.data_dir, work / "cache")
    data = export(cfg, work / "text")
    vocab = preprocess(
        a.fairseq_python,
        work / "text",
        work / "data-bin",
        cfg.task.data.src,
        cfg.task.data.tgt,
        env,
    )
    if vocab != data["vocab"]:
        raise SystemExit(f"fairseq's dictionary has {vocab} entries, normlab's {data['vocab']}")
    env["BENCH_PAD"] = "0"  # normlab's <pad> is entry 0 of the exported vocabulary
    # the data and the budget are the mini recipe's in every config: one batch list for all
    names = a.configs.split(",")
    longest = max(a.updates or CONFIGS[n][1] for n in names)
    batches = write_batches(cfg, work / "batches.json", longest + 1)
    shapes = [model_shape(name, a.data_dir, work) for name in names]
    results = {}
    for name in names:
        print(
            f"{name}: {a.updates or CONFIGS[name][1]} updates timed after {a.skip or CONFIGS[name][2]}",
            flush=True,
        )
        results[name] = bench(name, a, work, env, work / "data-bin", batches)
    text = "\n".join(
        [
            "# normlab vs fairseq-train: updates per second on the same data and model",
            "",
            f"{TASK} mini corpus ({data['train_pairs']} train pairs, vocab {data['vocab']}), LayerNorm, "
            f"pre-norm, {HOW[a.device]}. Repetitions: "
            + ", ".join(f"{n} {len(r['identical']['normlab'])}" for n, r in results.items())
            + " pairs of processes per row, the order alternating (A B, B A, ...); s/update and "
            "tok/s are medians over the processes, each ratio is taken within a pair of "
            f"neighbouring processes. {'; '.join(shapes)}, {cfg.task.data.max_tokens:,}-token "
            "budget. s/update: the loop's interval between update "
            "starts (median within a process); target tok/s: target tokens over those intervals.",
            "",
            table(results),
            "",
            "Against the targets (the median of the paired ratios; a range that straddles the "
            "bound says this machine cannot tell):",
            "",
            *verdicts(results),
            "",
            "Machine:",
            "",
            machine_block(info),
            "",
        ]
    )
    print(text)
    if a.out:
        a.out.parent.mkdir(parents=True, exist_ok=True)
        a.out.write_text(text)
        (a.out.with_suffix(".json")).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
