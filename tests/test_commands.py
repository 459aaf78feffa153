"""Every command says its version, ``python -m normlab`` lists them, and the list is the one
pyproject.toml installs."""

import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers import REPO
from normlab import __version__
from normlab.commands import COMMANDS


def test_the_listed_commands_are_the_installed_entry_points():
    tomllib = pytest.importorskip("tomllib")
    from normlab import entry

    scripts = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts == {name: f"normlab.entry:{name.replace('-', '_')}" for name, _, _ in COMMANDS}
    for name, target, _ in COMMANDS:  # each entry point runs its command's main
        assert target in getattr(entry, name.replace("-", "_")).__doc__


def test_ctrl_c_while_a_command_starts_is_one_line_and_exit_130():
    # SIGINT lands while torch and Hydra are imported, before normlab-train's own handler exists
    code = "from normlab.entry import normlab_train; normlab_train()"
    proc = subprocess.Popen(
        [sys.executable, "-c", code, "--help"],
        cwd=REPO,
        stderr=subprocess.PIPE,
        text=True,
        # as in a terminal: a shell without job control starts background jobs (a CI script's)
        # with SIGINT ignored, and Python then never raises KeyboardInterrupt at all
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    maps, deadline = Path(f"/proc/{proc.pid}/maps"), time.time() + 60
    # inside `import torch` (its library is mapped): Python's own start-up is over; a fixed delay
    # missed that window on a loaded machine
    while time.time() < deadline and "libtorch" not in maps.read_text():
        time.sleep(0.01)
    # again until it stops: a Ctrl-C landing in a library's bare `except:` is swallowed there
    for _ in range(50):
        if proc.poll() is not None:
            break
        proc.send_signal(signal.SIGINT)
        time.sleep(0.1)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130 and "Traceback" not in err, err[-2000:]
    assert "interrupted (Ctrl-C)" in err and len(err.strip().splitlines()) == 1, err


@pytest.mark.parametrize(
    "module",
    [
        "normlab.train",
        "normlab.tune",
        "normlab.evaluate",
        "normlab.export",
        "normlab.make_report",
        "normlab.campaigns.xu2019.wandb_dashboard",
    ],
)
def test_version_names_normlab_torch_and_hydra(module):
    out = subprocess.run(
        [sys.executable, "-m", module, "--version"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    import torch

    assert re.fullmatch(
        rf"normlab {re.escape(__version__)} \(torch {re.escape(torch.__version__)}, hydra-core "
        r"1\.3\.\d+, Python 3\.\d+\.\d+\)\n",
        out.stdout,
    ), out.stdout


def test_python_m_normlab_lists_every_command():
    out = subprocess.run(
        [sys.executable, "-m", "normlab"], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0
    for name, _, what in COMMANDS:
        assert re.search(rf"^  {name} +{re.escape(what)}$", out.stdout, re.M), out.stdout


def test_license_and_changelog():
    assert (REPO / "LICENSE").read_text().startswith("MIT License")
    log = (REPO / "CHANGELOG.md").read_text()
    assert "## [Unreleased]" in log and re.search(
        rf"## \[{re.escape(__version__)}\] - \d{{4}}-\d\d-\d\d", log
    )
