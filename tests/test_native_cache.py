"""The native kernels are built once per machine, torch and Python: a second checkout or a second
virtual environment loads the build another one made without re-running the build tool; two
processes that start at once build once; a run's wall time leaves the build out."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from helpers import REPO, TEST_CACHE
from normlab.files import read_json
from normlab.norms import native, native_build

needs_native = pytest.mark.skipif(
    os.environ.get("NORMLAB_NATIVE") == "0" or shutil.which("c++") is None,
    reason="native kernels disabled or no C++ compiler",
)

LOAD = (
    "import sys, normlab\nfrom normlab.norms import native\n"
    "m = native.load()\nprint('LOADED', m is not None, native.build_seconds(), normlab.__file__)\n"
)


def load_in(python: str, pythonpath: Path | None, cwd: Path, ext_dir: Path | None = None):
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    if pythonpath is not None:
        env["PYTHONPATH"] = str(pythonpath)
    if ext_dir is not None:
        env["NORMLAB_EXT_DIR"] = str(ext_dir)
    return subprocess.Popen(
        [python, "-c", LOAD],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finished(proc) -> tuple[str, str]:
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err[-3000:]
    return out, err


def snapshot(folder: Path) -> dict:
    return {
        p.name: p.stat().st_mtime_ns
        for p in folder.iterdir()
        if p.is_file() and p.name != "build.lock"
    }


def second_venv(tmp_path: Path) -> Path:
    """A venv of the same interpreter whose packages (torch and normlab included) are reached
    through paths of its own: torch's include paths, which its extension builder writes into
    the build file, differ from the first venv's."""
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(tmp_path / "venv2")], check=True
    )
    here = Path(next(p for p in sys.path if p.endswith("site-packages")))
    there = next((tmp_path / "venv2" / "lib").glob("python*/site-packages"))
    for entry in here.iterdir():
        (there / entry.name).symlink_to(entry)
    return tmp_path / "venv2" / "bin" / "python"


@needs_native
def test_a_second_checkout_and_a_second_venv_load_the_kernels_without_rebuilding(tmp_path):
    assert native.load() is not None
    cap = __import__("torch").backends.cpu.get_cpu_capability()
    folder = native_build.folder(
        native.build_dir(), native_build.key(native._CSRC, cap, _flags(cap))
    )
    assert (folder / native_build.DONE).exists()
    before = snapshot(folder)
    checkout = tmp_path / "checkout2"
    shutil.copytree(
        REPO / "normlab", checkout / "normlab", ignore=shutil.ignore_patterns("__pycache__")
    )
    python2 = second_venv(tmp_path)
    for python, path in (
        (sys.executable, checkout),
        (str(python2), checkout),
        (str(python2), None),
        (sys.executable, None),
        (str(python2), checkout),
    ):  # used in turn
        out, err = finished(load_in(python, path, tmp_path))
        loaded, built, module = out.split("LOADED ")[1].split()
        assert (loaded, float(built)) == ("True", 0.0) and "building" not in err, err
        assert module.startswith(str(checkout if path else REPO)), module
    assert snapshot(folder) == before  # nothing rebuilt, relinked or rewritten


def _flags(cap):
    return ["-O3", "-fopenmp", *([native._ARCH[cap]] if cap in native._ARCH else [])]


def test_the_build_key_names_sources_compiler_torch_and_interpreter_but_no_path(tmp_path):
    cap = "AVX2"
    k = native_build.key(native._CSRC, cap, _flags(cap))
    assert set(k) == {"sources", "cpu", "flags", "compiler", "torch", "python"}
    assert set(k["sources"]) == {
        p.name for p in native._CSRC.iterdir() if p.suffix in (".cpp", ".h")
    }
    assert str(REPO) not in str(k) and sys.prefix not in str(k)
    copy = tmp_path / "csrc"
    shutil.copytree(native._CSRC, copy)
    assert (
        native_build.folder(tmp_path, native_build.key(copy, cap, _flags(cap))).name
        == native_build.folder(tmp_path, k).name
    )  # same sources elsewhere: same build
    (copy / "common.h").write_text((copy / "common.h").read_text() + "\n// changed\n")
    assert (
        native_build.folder(tmp_path, native_build.key(copy, cap, _flags(cap))).name
        != native_build.folder(tmp_path, k).name
    )  # a changed header: a new build


def test_a_waiting_process_is_told_and_the_lock_is_exclusive(tmp_path, capsys):
    order = []

    def other():
        with native_build.locked(tmp_path / "build.lock"):
            order.append("other")

    with native_build.locked(tmp_path / "build.lock") as waited:
        assert waited < 1.0
        t = threading.Thread(target=other)
        t.start()
        time.sleep(0.5)
        order.append("first")
    t.join(timeout=30)
    assert order == ["first", "other"]
    assert "another process is building normlab's CPU norm kernels" in capsys.readouterr().err


@pytest.mark.slow
@needs_native
def test_two_processes_starting_at_once_build_once_and_a_run_leaves_the_build_out_of_its_wall_time(
    tmp_path,
):
    ext = tmp_path / "ext"
    env = {**os.environ, "NORMLAB_EXT_DIR": str(ext), "NORMLAB_CACHE": str(TEST_CACHE)}
    tic = time.time()
    train = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "normlab.train",
            "task=synthetic_cls",
            "scale=smoke",
            "norm=rmsnorm",
            "threads=1",
            "progress=false",
            f"paths.root={tmp_path / 'runs'}",
            f"hydra.run.dir={tmp_path / 'run'}",
        ],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    loader = load_in(sys.executable, None, REPO, ext)
    (_, err1), (_, err2) = finished(train), finished(loader)
    elapsed = time.time() - tic
    assert (err1 + err2).count("[normlab] building") == 1, err1 + err2
    assert (err1 + err2).count("another process is building") == 1
    assert len([p for p in ext.iterdir() if (p / native_build.DONE).exists()]) == 1
    s = read_json(tmp_path / "run" / "summary.json")
    assert s["status"] == "completed" and s["native_build_s"] > 5
    assert s["wall_time_s"] + s["native_build_s"] <= elapsed + 1
    assert s["wall_time_s"] < s["native_build_s"]  # a smoke run is seconds; the build is most of it
    assert (
        s["train_time_s"] < s["wall_time_s"]
    )  # and the training time (throughput) leaves it out too
