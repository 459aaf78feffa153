"""Data time of a run's first start (no cache) against its second start (cache hit).

    python scripts/bench_data.py                         # RT, SST-2, IMDB at mini scale
    python scripts/bench_data.py --tasks rt --out results/bench/data.md

Every start is a fresh Python process (as a run is), which composes the task config and then
times what the runner does with data before training: ``task.setup()`` (read the released files,
tokenize, build the vocabulary and tensors, or load them from the cache) and the first epoch's
batch index (``train_batches(0, seed)``, which the Trainer builds at start). The first start uses
an empty cache directory; the second starts reuse it. Reported: wall and process-CPU seconds,
the second start as a percentage of the first (target <= 10%), how long loading the cache file
takes with torch.load(weights_only=True) (what normlab.data.cache does) and with the full
unpickler, the cache file's size, and the bytes and types the task holds its splits in.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))


def child(task_name: str, scale: str, data: str, cache: str) -> dict:
    """Runs in the subprocess: compose, then time setup() and the first epoch's batch index."""
    import torch
    from bench_step import compose

    from normlab.tasks import get_task_class

    torch.set_num_threads(1)
    job = compose(task_name, "layernorm", scale, Path(data), Path(cache))
    task = get_task_class(job.task.name)(
        job.task, Path(job.paths.data_dir) / job.task.name, Path(cache)
    )
    task.run_seed = job.seed
    w0, c0 = time.perf_counter(), time.process_time()
    task.setup()
    w1, c1 = time.perf_counter(), time.process_time()
    batches = task.train_batches(0, job.seed)
    first = batches[0]
    w2, c2 = time.perf_counter(), time.process_time()
    held = {}
    for split, value in getattr(task, "splits", {}).items():
        tensors = [t for t in _tensors(value)]
        held[split] = {
            "bytes": sum(t.numel() * t.element_size() for t in tensors),
            "types": sorted({type(v).__name__ for v in _leaves(value)}),
        }
    # where a cache hit goes: the cache file through torch.load's restricted (weights_only)
    # unpickler, as normlab.data.cache loads it, and through the full one
    loads = {}
    for weights_only in (True, False):
        t0 = time.perf_counter()
        for f in Path(cache).glob("*.pt"):
            torch.load(f, map_location="cpu", weights_only=weights_only)
        loads[weights_only] = time.perf_counter() - t0
    return {
        "setup_wall": w1 - w0,
        "setup_cpu": c1 - c0,
        "batches_wall": w2 - w1,
        "batches_cpu": c2 - c1,
        "n_batches": len(batches),
        "first_batch": list(first[0].shape),
        "held": held,
        "sizes": task.data_info.get("sizes"),
        "source": task.data_info.get("source"),
        "load_weights_only": loads[True],
        "load_full": loads[False],
    }


def _leaves(value):
    if isinstance(value, (tuple, list)):
        for v in value:
            yield from _leaves(v)
    else:
        yield value


def _tensors(value):
    import torch

    for leaf in _leaves(value):
        if torch.is_tensor(leaf):
            yield leaf
        elif hasattr(leaf, "__dict__"):  # e.g. Ragged(flat, offsets)
            yield from (v for v in vars(leaf).values() if torch.is_tensor(v))


def start(task: str, scale: str, data: str, cache: Path) -> dict:
    cmd = [
        sys.executable,
        __file__,
        "--child",
        task,
        "--scale",
        scale,
        "--data",
        data,
        "--cache",
        str(cache),
    ]
    out = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, timeout=3600)
    if out.returncode != 0:
        raise RuntimeError(f"{task}: child failed\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None):
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--tasks", default="rt,sst2,imdb")
    ap.add_argument("--scale", default="mini")
    ap.add_argument("--repeats", type=int, default=3, help="second starts per task (median)")
    ap.add_argument("--data", default=os.environ.get("NORMLAB_DATA") or str(REPO / "data"))
    ap.add_argument("--child")
    ap.add_argument("--cache")
    ap.add_argument("--out")
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child, args.scale, args.data, args.cache)))
        return
    from benchkit import load_average, machine, machine_block, markdown_table, median, write

    info = machine()
    rows, held_rows = [], []
    for task in args.tasks.split(","):
        cache = Path(tempfile.mkdtemp(prefix=f"bench_data_{task}_"))
        try:
            first = start(task, args.scale, args.data, cache)
            seconds = [start(task, args.scale, args.data, cache) for _ in range(args.repeats)]
            cache_mb = sum(f.stat().st_size for f in cache.glob("*.pt")) / 2**20
        finally:
            shutil.rmtree(cache, ignore_errors=True)

        def total(r, kind):
            return r[f"setup_{kind}"] + r[f"batches_{kind}"]

        sw = median([total(r, "wall") for r in seconds])
        sc = median([total(r, "cpu") for r in seconds])
        pct = 100 * sw / total(first, "wall")
        rows.append(
            [
                f"`{task}`",
                f"{first['source']}, {first['sizes']}",
                f"{total(first, 'wall'):.2f} / {total(first, 'cpu'):.2f}",
                f"{sw:.3f} / {sc:.3f}",
                f"{pct:.1f}%" + (" **>10%**" if pct > 10 else ""),
                f"{100 * sc / total(first, 'cpu'):.1f}%",
                f"{median([r['setup_wall'] for r in seconds]):.3f} + "
                f"{median([r['batches_wall'] for r in seconds]):.3f}",
                f"{median([r['load_weights_only'] for r in seconds]):.3f} / "
                f"{median([r['load_full'] for r in seconds]):.3f}",
                f"{cache_mb:.1f}",
            ]
        )
        for split, h in first["held"].items():
            held_rows.append(
                [f"`{task}`", split, f"{h['bytes'] / 2**20:.2f}", ", ".join(h["types"])]
            )
        print(rows[-1], flush=True)
    header = [
        "task",
        "data (source, sizes)",
        "first start s (wall / cpu)",
        "second start s (wall / cpu, median)",
        "second / first (wall)",
        "second / first (cpu)",
        "second: setup + batch index s (wall)",
        "cache torch.load s (weights_only / full)",
        "cache MiB",
    ]
    info["load average at end (1/5/15 min)"] = load_average()
    report = "\n\n".join(
        [
            "# Data time: first start vs second start (cache hit)",
            machine_block(info),
            __doc__.split("\n\n", 2)[2].strip(),
            markdown_table(header, rows),
            "### What the task holds in memory after setup",
            markdown_table(["task", "split", "MiB", "types"], held_rows),
        ]
    )
    print(report)
    if args.out:
        write(args.out, report + "\n")


if __name__ == "__main__":
    main()
