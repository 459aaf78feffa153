#!/usr/bin/env python
"""How long a job takes to start: ``import normlab.train`` against ``import torch``, and
``normlab-train`` from launch to its first training step.

    python scripts/bench_startup.py                                  # 7 rounds, printed
    python scripts/bench_startup.py --rounds 9 --out results/bench/startup.md

Each measurement is a fresh Python process, timed from its launch to its exit (the imports) or to
the start of its first update (the job: normlab.train's own command line, a smoke RT run with a
fresh run directory, the data cache warm). The kinds run interleaved, their order rotating from one
round to the next, so a change in the machine's load falls on all of them alike; each ratio is
taken within a round. Target: the import of normlab.train <= 1.3x torch's (a job loads no
statistics or plotting stack, only what training needs).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))

from benchkit import machine, machine_block, markdown_table, median, write  # noqa: E402

TARGET = 1.3
# The job, up to the start of its first update: normlab.train's command line, its trainer's step
# wrapped to report the time and end the process there.
FIRST_STEP = """
import os, sys, time
from normlab.run.trainer import Trainer
def first(self, *a, **k):
    print(time.time() - float(os.environ["BENCH_T0"]), flush=True)
    os._exit(0)
Trainer._step = first
from normlab import train
sys.argv = ["normlab-train", *sys.argv[1:]]
train.main()
"""


def timed(argv: list[str], env: dict) -> float:
    """Seconds from launch to exit, or to the first update when the child prints it."""
    env = {**env, "BENCH_T0": repr(time.time())}
    t0 = time.perf_counter()
    out = subprocess.run(argv, env=env, capture_output=True, text=True)
    took = time.perf_counter() - t0
    if out.returncode:
        raise SystemExit(f"{' '.join(argv[:3])} ... failed:\n{out.stderr[-2000:]}")
    lines = out.stdout.split()
    return float(lines[-1]) if lines else took


def kinds(root: Path) -> dict[str, callable]:
    py = sys.executable
    job = [
        "task=rt", "norm=layernorm", "scale=smoke", "threads=1", "progress=false",
        f"paths.root={root}", "name=startup",
    ]  # fmt: skip
    counter = iter(range(10**6))
    return {
        "import torch": lambda env: timed([py, "-c", "import torch"], env),
        "import normlab.train": lambda env: timed([py, "-c", "import normlab.train"], env),
        # a new seed each time: a fresh run directory, so nothing is resumed or skipped
        "normlab-train to its first step": lambda env: timed(
            [py, "-c", FIRST_STEP, *job, f"seed={next(counter) + 100}"], env
        ),
    }


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--rounds", type=int, default=7, help="interleaved rounds (default 7)")
    p.add_argument("--out", type=Path, help="also write the table here (Markdown)")
    a = p.parse_args(argv)
    info = machine()
    env = dict(os.environ, OMP_NUM_THREADS="1")
    with tempfile.TemporaryDirectory(prefix="bench-startup-") as tmp:
        run = kinds(Path(tmp))
        names = list(run)
        run[names[2]](env)  # warm the data cache and the page cache: every round starts alike
        times: dict[str, list[float]] = {n: [] for n in names}
        for r in range(a.rounds):
            for n in names[r % len(names) :] + names[: r % len(names)]:
                times[n].append(run[n](env))
            print(f"round {r + 1}: " + ", ".join(f"{n} {times[n][-1]:.2f} s" for n in names))
    ratios = [nl / t for nl, t in zip(times["import normlab.train"], times["import torch"])]
    rows = [[f"`{n}`", f"{median(v):.2f}", f"{min(v):.2f}-{max(v):.2f}"] for n, v in times.items()]
    ratio = median(ratios)
    verdict = "met" if ratio <= TARGET else "NOT met"
    text = "\n".join(
        [
            "# Start-up: a training job's imports and its time to the first step",
            "",
            __doc__.split("\n\n", 2)[2].strip(),
            "",
            markdown_table(["process", "median s", "range s"], rows),
            "",
            f"- import normlab.train / import torch: **{ratio:.2f}** (range over rounds "
            f"{min(ratios):.2f}-{max(ratios):.2f}, {a.rounds} rounds); target <= {TARGET}: {verdict}",
            "",
            "Machine:",
            "",
            machine_block(info),
            "",
        ]
    )
    print(text)
    if a.out:
        write(a.out, text)


if __name__ == "__main__":
    main()
