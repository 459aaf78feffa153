"""A study slice's progress line (runs done / total and an ETA from this slice's rate) and the job bars."""

import re
from pathlib import Path

from normlab.progress import eta_line


def test_eta_extrapolates_this_slices_rate_only():
    # runs finished before the slice say nothing about how long a run takes
    assert (
        eta_line(1, 5, 0, 0.0)
        == "[reproduce] 1/5 runs done (0 in this slice, 0 s), ETA after the first run"
    )
    assert (
        eta_line(2, 5, 1, 120.0) == "[reproduce] 2/5 runs done (1 in this slice, 2 min), ETA 6 min"
    )
    assert (
        eta_line(5, 5, 4, 3 * 3600.0, "tuned")
        == "[tuned] 5/5 runs done (4 in this slice, 3.0 h), all done"
    )


def test_progress_true_shows_evaluation_bars_and_false_shows_none(tmp_path, capsys, monkeypatch):
    from helpers import run_job
    from normlab import progress

    monkeypatch.setattr(progress, "_terminal", lambda: True)  # bars are for a terminal
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

    monkeypatch.setattr(progress, "_terminal", lambda: True)
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

    from normlab.norms import native, native_build

    builds = []

    def fake_load(name, sources, build_directory, **kw):  # a real build takes 20-90 s
        builds.append(build_directory)
        (Path(build_directory) / f"{name}.so").write_bytes(b"")
        return object()

    monkeypatch.setenv("NORMLAB_EXT_DIR", str(tmp_path / "ext"))
    monkeypatch.setenv("NORMLAB_NATIVE", "1")
    monkeypatch.setattr(cpp_extension, "load", fake_load)
    monkeypatch.setattr(native_build, "import_built", lambda name, out: object())
    saved = dict(native._state)
    try:
        for _ in range(2):
            native._state.pop("mod", None)
            assert native.load() is not None
    finally:
        native._state.clear()
        native._state.update(saved)
    err = capsys.readouterr().err
    assert len(builds) == 1  # the second finds the finished build
    assert err.count("[normlab] building normlab's CPU norm kernels, once per machine") == 1


def test_progress_to_a_file_is_a_line_per_tenth_of_the_steps_never_bars(tmp_path):
    import os
    import subprocess
    import sys

    from helpers import REPO, TEST_CACHE

    err = tmp_path / "err.log"
    with open(err, "w") as f:  # stderr redirected, as in a sweep's or a scheduler's log
        out = subprocess.run(
            [
                sys.executable,
                "-m",
                "normlab.train",
                "task=synthetic_cls",
                "scale=smoke",
                "threads=1",
                "progress=true",
                f"paths.root={tmp_path / 'runs'}",
                "task.train.max_steps=300",
                "task.train.eval_every=100",
            ],
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=f,
            text=True,
            env={**os.environ, "NORMLAB_CACHE": str(TEST_CACHE)},
            timeout=600,
        )
    assert out.returncode == 0
    text = err.read_text()
    assert "\r" not in text and "%|" not in text and len(text) < 4000, len(text)
    steps = [int(s) for s in re.findall(r"step (\d+)/300\b", text)]
    assert steps == list(range(30, 301, 30))
