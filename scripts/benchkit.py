"""What every benchmark script (bench_norms, bench_step, bench_data, bench_gpu) needs alike: the
machine facts a table must state to be read, one clock, markdown output, and a pinned glibc
malloc."""

from __future__ import annotations

import ctypes
import ctypes.util
import datetime
import os
import shlex
import statistics
import sys
import time
from pathlib import Path

import torch

from normlab import gitinfo


def load_average() -> str:
    try:
        return " ".join(f"{v:.2f}" for v in os.getloadavg())
    except OSError:
        return "n/a"


def code_version() -> str:
    """The commit the timed code is, "-dirty" when its files have uncommitted changes."""
    try:
        return gitinfo.head() + ("-dirty" if gitinfo.dirty() else "")
    except (gitinfo.GitError, OSError):  # no git checkout (an unpacked release): time it anyway
        return "unknown (no git checkout)"


def machine() -> dict:
    """What a benchmark table must state to be read: where, when, with what, how loaded."""
    host = (
        gitinfo.machine()
    )  # the facts reproduce.json records for a grid, plus what a timing depends on
    info = {
        "command": " ".join(shlex.quote(a) for a in ["python", *sys.argv]),
        "code": code_version(),
        "date": datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z"),
        "nproc": host["cpus"],
        "cpu": host["cpu"],
        "memory (GB)": host.get("memory_gb"),
        "torch": host["torch"],
        "torch threads": torch.get_num_threads(),
        "cpu capability": torch.backends.cpu.get_cpu_capability(),
        "python": host["python"],
        "load average at start (1/5/15 min)": load_average(),
    }
    if host["gpu"]:
        info["cuda device"] = host["gpu"]
    return info


def median(xs) -> float:
    return statistics.median(xs) if xs else float("nan")


def clock(device=None):
    """CPU time of this thread when torch runs one CPU thread: on a shared machine, time spent
    descheduled for other processes is not the code's cost (wall time then varies 5x between
    runs, thread time by a few percent). Wall time otherwise (intra-op threads, CUDA)."""
    cpu = device is None or torch.device(device).type == "cpu"
    return time.thread_time if cpu and torch.get_num_threads() == 1 else time.perf_counter


def timed(fn, *args, device=None) -> float:
    """Seconds of one ``fn(*args)`` by clock(device), bracketed by CUDA synchronisation on a GPU;
    its result is freed after the clock stops (freeing is not the code's cost)."""
    cuda = device is not None and torch.device(device).type == "cuda"
    sync = (lambda: torch.cuda.synchronize(device)) if cuda else (lambda: None)
    now = clock(device)
    sync()
    t0 = now()
    out = fn(*args)
    sync()
    dt = now() - t0
    del out
    return dt


def rounds(fns: dict, batches, n: int, warmup: int = 3, device=None) -> dict:
    """Per-round times of every fn on the same batch, the order rotating between rounds (load and
    caches then hit each fn alike); the first ``warmup`` rounds are not kept."""
    out, keys = {k: [] for k in fns}, list(fns)
    for r in range(n + warmup):
        batch = batches[r % len(batches)]
        for k in keys[r % len(keys) :] + keys[: r % len(keys)]:
            dt = timed(fns[k], batch, device=device)
            if r >= warmup:
                out[k].append(dt)
    return out


def ratio(a, b) -> float:
    """The median over rounds of a's time / b's time in the same round."""
    return median([x / y for x, y in zip(a, b)])


def markdown_table(header: list[str], rows: list[list]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    return "\n".join(lines + ["| " + " | ".join(str(c) for c in r) + " |" for r in rows])


def machine_block(info: dict) -> str:
    return "\n".join(f"- {k}: `{v}`" if k == "command" else f"- {k}: {v}" for k, v in info.items())


def write(path, text: str) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    print(f"wrote {path}")


def pin_malloc() -> bool:
    """Fixed glibc malloc thresholds: mmap only above 32 MiB (the largest glibc allows), never
    give freed heap memory back. Returns False where there is no glibc mallopt."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c"))
        m_trim_threshold, m_mmap_threshold = -1, -3
        return bool(
            libc.mallopt(m_mmap_threshold, 32 << 20) and libc.mallopt(m_trim_threshold, 1 << 40)
        )
    except (OSError, AttributeError, TypeError):
        return False
