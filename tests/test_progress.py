"""make reproduce-table's progress line: runs done / total and an ETA from this sweep's rate."""
import subprocess
import sys
from pathlib import Path

from normlab.progress import RunProgress, watch


class Clock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


def test_eta_extrapolates_this_sweeps_rate_only(tmp_path):
    done = {tmp_path / "a"}  # finished before the sweep: says nothing about a run's duration
    clock = Clock()
    p = RunProgress([tmp_path / x for x in "abcde"], lambda path: path in done, clock)
    assert p.poll() == "[reproduce] 1/5 runs done (0 in this sweep, 0 s), ETA after the first run"
    assert p.poll() is None  # nothing changed, nothing printed
    clock.t = 120.0
    done.add(tmp_path / "b")
    assert p.poll() == "[reproduce] 2/5 runs done (1 in this sweep, 2 min), ETA 6 min"
    clock.t = 3 * 3600.0
    done.update(tmp_path / x for x in "cde")
    assert p.poll() == "[reproduce] 5/5 runs done (4 in this sweep, 3.0 h), all done"


def test_watch_returns_the_exit_status_and_reports_the_final_count(tmp_path, capsys):
    marker = tmp_path / "run1"
    p = RunProgress([marker], lambda path: path.exists())
    proc = subprocess.Popen([sys.executable, "-c", f"open({str(marker)!r}, 'w'); raise SystemExit(3)"])
    assert watch(proc, p, every=0.05) == 3
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("[reproduce] 0/1 runs done") and out[-1].startswith("[reproduce] 1/1 runs done")


def test_progress_true_shows_evaluation_bars_and_false_shows_none(tmp_path, capsys):
    from helpers import run_job
    args = ["task=synthetic_cls", "scale=smoke", "threads=1"]
    run_job([*args, "progress=true"], tmp_path / "on")
    err = capsys.readouterr().err
    assert "evaluate valid" in err and "evaluate test" in err
    run_job([*args, "progress=false"], tmp_path / "off")
    err = capsys.readouterr().err
    assert "evaluate" not in err and "%|" not in err


def test_bpe_learning_bar_follows_the_switch(monkeypatch):
    from tokenizers import trainers

    from normlab import progress
    from normlab.data.bpe import JointBPE
    seen = []
    real = trainers.BpeTrainer

    def spy(**kw):
        seen.append(kw["show_progress"])
        return real(**kw)
    monkeypatch.setattr(trainers, "BpeTrainer", spy)
    for on in (True, False):
        progress.enable_bars(on)
        JointBPE.learn(["a b a b c", "a b d"], merges=2)
    progress.enable_bars(False)
    assert seen == [True, False]


def test_one_line_before_a_first_native_kernel_build_and_none_after(tmp_path, monkeypatch, capsys):
    from torch.utils import cpp_extension

    from normlab.norms import native
    builds = []

    def fake_load(name, sources, build_directory, **kw):  # a real build takes 20-90 s
        builds.append(build_directory)
        (Path(build_directory) / f"{name}.so").write_bytes(b"")
        return object()
    monkeypatch.setenv("NORMLAB_EXT_DIR", str(tmp_path / "ext"))
    monkeypatch.setenv("NORMLAB_NATIVE", "1")
    monkeypatch.setattr(cpp_extension, "load", fake_load)
    saved = dict(native._state)
    try:
        for _ in range(2):
            native._state.pop("mod", None)
            assert native.load() is not None
    finally:
        native._state.clear()
        native._state.update(saved)
    err = capsys.readouterr().err
    assert len(builds) == 2
    assert err.count("building normlab's CPU norm kernels once, ~20 s") == 1  # the second finds the .so
