"""The native kernels' build, once per machine: a cache outside any checkout, one folder per build
key, a lock for processes that start at once, and an import that never re-runs the build tool.

The key is what the compiled module depends on: the sources' bytes, the CPU instruction set and
flags, the compiler, torch's version and build, and the interpreter (version and ABI). It is not
the checkout or the virtual environment: torch's extension builder writes their absolute paths
into its build file, so a shared folder built by one checkout (or venv) and loaded by another
made the build tool rebuild it each time the other was used. Here the sources are copied into the
key's folder before the build, and a folder whose build finished (``built.json``) is imported
directly; the build tool runs only to make a folder that does not exist yet.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

import torch

DONE = "built.json"


def compiler() -> str:
    """The C++ compiler torch's builder will call, with its version line."""
    cxx = os.environ.get("CXX", "c++")
    try:
        line = subprocess.run(
            [cxx, "--version"], capture_output=True, text=True, timeout=60
        ).stdout.splitlines()[0]
    except (OSError, subprocess.SubprocessError, IndexError):
        line = "version unknown"
    return f"{cxx}: {line}"


def key(csrc: Path, cap: str, flags: list[str]) -> dict:
    """Everything the built module depends on (written to built.json, hashed into its folder name)."""
    sources = {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(csrc.iterdir())
        if p.suffix in (".cpp", ".h")
    }
    return {
        "sources": sources,
        "cpu": cap,
        "flags": flags,
        "compiler": compiler(),
        "torch": f"{torch.__version__} ({torch.version.git_version})",
        "python": f"{sys.version} {sys.implementation.cache_tag} {sysconfig.get_config_var('EXT_SUFFIX')}",
    }


def folder(root: Path, k: dict) -> Path:
    return (
        root
        / f"{k['cpu'].lower()}-{hashlib.sha256(json.dumps(k, sort_keys=True).encode()).hexdigest()[:12]}"
    )


def import_built(name: str, out: Path):
    spec = importlib.util.spec_from_file_location(name, out / f"{name}.so")
    if spec is None or spec.loader is None:
        raise ImportError(f"no module {name} in {out}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@contextlib.contextmanager
def locked(path: Path):
    """An exclusive lock on ``path`` (released by the OS if the holder dies); yields the seconds waited."""
    import fcntl

    with open(path, "a") as fh:
        waited = time.perf_counter()
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            print(
                f"[normlab] another process is building normlab's CPU norm kernels in {path.parent}; "
                "waiting for it",
                file=sys.stderr,
                flush=True,
            )
            fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield time.perf_counter() - waited
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def load(name: str, csrc: Path, root: Path, cap: str, flags: list[str]) -> tuple[object, float]:
    """The module built from ``csrc`` (building it first where no finished build exists), and the
    seconds this call spent building or waiting for another process's build (0.0 when cached)."""
    k = key(csrc, cap, flags)
    out = folder(root, k)
    if (out / DONE).exists():
        return import_built(name, out), 0.0
    out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    module = None
    with locked(out / "build.lock"):
        if not (out / DONE).exists():  # not built meanwhile by the process we waited for
            module = _build(name, csrc, out, k, flags)
    return module or import_built(name, out), time.perf_counter() - start


def _build(name: str, csrc: Path, out: Path, k: dict, flags: list[str]):
    from torch.utils import cpp_extension

    print(
        f"[normlab] building normlab's CPU norm kernels, once per machine, torch and Python (20-90 s); "
        f"cached in {out}",
        file=sys.stderr,
        flush=True,
    )
    src = out / "src"
    src.mkdir(exist_ok=True)
    for p in csrc.iterdir():
        if p.suffix in (".cpp", ".h"):
            shutil.copyfile(p, src / p.name)
    # torch's own lock file, left behind by a build that was killed, would make it wait forever;
    # holding our lock, no other normlab process is building here
    (out / "lock").unlink(missing_ok=True)
    tic = time.perf_counter()
    module = cpp_extension.load(
        name=name,
        sources=[str(p) for p in sorted(src.glob("*.cpp"))],
        build_directory=str(out),
        extra_cflags=flags,
        extra_ldflags=["-fopenmp"],
        verbose=False,
    )
    tmp = out / f"{DONE}.tmp"
    tmp.write_text(
        json.dumps(
            {
                **k,
                "build_s": round(time.perf_counter() - tic, 1),
                "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            },
            indent=1,
        )
    )
    os.replace(tmp, out / DONE)
    return module
