"""Extending normlab without forking it: a norm of the user's own package (examples/normlab-example,
installed as pip installs it) and a norm added inside normlab as one module plus one config, each
trained, converted into a model and shown in the report under the label it declares."""

from __future__ import annotations

import filecmp
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from torch import nn

from helpers import REPO, TEST_CACHE
from normlab import plugins
from normlab.norms import NORMS, build_norm, register_norm
from normlab.norms import registry as R
from normlab.report import norm_cards


def _env(tmp_path: Path, pythonpath: Path, data_dir: Path) -> dict:
    return {
        **os.environ,
        "PYTHONPATH": str(pythonpath),
        "NORMLAB_CACHE": str(TEST_CACHE),
        "NORMLAB_DATA": str(data_dir),
        "HYDRA_FULL_ERROR": "1",
    }


def _run(args: list[str], cwd: Path, env: dict) -> subprocess.CompletedProcess:
    out = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, f"{args}\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}"
    return out


def _train_and_report(tmp_path, env, norm, tasks, label):
    """A smoke multirun of ``norm`` on ``tasks``, then normlab-report on it: each run completes,
    records the norm's card, and the summary table names the norm by its declared label."""
    sweep = tmp_path / "multirun"
    _run(
        [
            sys.executable,
            "-m",
            "normlab.train",
            "-m",
            f"task={','.join(tasks)}",
            f"norm={norm}",
            "scale=smoke",
            "progress=false",
            f"paths.root={tmp_path / 'runs'}",
            f"hydra.sweep.dir={sweep}",
        ],
        tmp_path,
        env,
    )
    for task in tasks:
        run = sweep / task / norm / "seed1"
        assert '"status": "completed"' in (run / "summary.json").read_text(), run
        assert f"label: {label}" in (run / "config.yaml").read_text()
    out = tmp_path / "report"
    _run(
        [
            sys.executable,
            "-m",
            "normlab.make_report",
            "--no-figures",
            "--out",
            str(out),
            str(sweep),
        ],
        tmp_path,
        env,
    )
    rows = [
        line
        for line in (out / "summary.md").read_text().splitlines()
        if line.startswith(f"| {label} |")
    ]
    assert len(rows) == 1 and rows[0].count("(1)") == len(tasks), rows


@pytest.mark.slow
def test_a_norm_from_the_users_own_package_runs_everywhere(tmp_path, data_dir):
    # installed as pip does (entry point, package data, Hydra plugin), into a folder of its own so
    # the project's venv stays as it is
    src = tmp_path / "src"
    shutil.copytree(REPO / "examples" / "normlab-example", src)
    site = tmp_path / "site"
    _run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "--target",
            str(site),
            str(src),
        ],
        tmp_path,
        os.environ.copy(),
    )
    env = _env(tmp_path, site, data_dir)
    # its norm at every norm position: a transformer classifier (rt) and the MNIST CNN (channels
    # first); the gradient probe and the report read it like a shipped norm
    _train_and_report(tmp_path, env, "lpnorm", ["rt", "mnist"], "LpNorm (p=1)")
    probe = (
        "import torch; from torch import nn; from normlab.norms import convert_norms, build_norm\n"
        "m = convert_norms(nn.TransformerEncoderLayer(8, 2, 16), 'lpnorm', p=2.0)\n"
        "kinds = {type(x).__name__ for x in m.modules()}\n"
        "assert 'LpNorm' in kinds and 'LayerNorm' not in kinds, kinds\n"
        "x = torch.randn(3, 8)\n"
        "ref = nn.functional.layer_norm(x, (8,), eps=1e-5)\n"
        "assert torch.allclose(build_norm('lpnorm', 8, p=2.0, affine=False)(x), ref, atol=1e-5)\n"
        "print('ok')"
    )
    assert _run([sys.executable, "-c", probe], tmp_path, env).stdout.strip() == "ok"
    # a bad option of the plugin's norm is the same one-line error as a shipped norm's
    bad = subprocess.run(
        [sys.executable, "-m", "normlab.train", "task=rt", "norm=lpnorm", "norm.options.p=0"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert bad.returncode == 2 and "norm.options.p=0 is out of range" in bad.stderr, bad.stderr


def test_a_norm_inside_normlab_is_one_module_and_one_config(tmp_path, data_dir):
    pkg = tmp_path / "normlab"
    shutil.copytree(REPO / "normlab", pkg, ignore=shutil.ignore_patterns("__pycache__"))
    (pkg / "norms" / "variants" / "meanonly.py").write_text(
        '"""Mean-only normalization (Salimans & Kingma 2016) over the features: x - mean, plus a bias."""\n'
        "from ..layers import Norm\n"
        "from ..registry import register_norm\n\n\n"
        '@register_norm("meanonly")\n'
        "class MeanOnly(Norm):\n"
        '    def __init__(self, dim, channels_first=False, impl="fused"):\n'
        "        super().__init__(dim, bias=True, channels_first=channels_first, impl=impl)\n\n"
        "    def normalize(self, x):\n"
        "        return x - x.mean(-1, keepdim=True)\n"
    )
    (pkg / "configs" / "norm" / "meanonly.yaml").write_text(
        "name: meanonly\noptions: {}\n"
        'display:\n  label: "Mean-only"\n  color: tab:olive\n  dash: "-"\n  order: 40\n'
    )
    diff = filecmp.dircmp(REPO / "normlab", pkg, ignore=["__pycache__"])

    def added(d, prefix=""):
        out = [f"{prefix}{n}" for n in d.right_only] + [f"{prefix}{n}" for n in d.diff_files]
        for name, sub in d.subdirs.items():
            out += added(sub, f"{prefix}{name}/")
        return out

    assert sorted(added(diff)) == ["configs/norm/meanonly.yaml", "norms/variants/meanonly.py"]
    _train_and_report(tmp_path, _env(tmp_path, tmp_path, data_dir), "meanonly", ["rt"], "Mean-only")


def test_a_broken_plugin_is_named_and_skipped(monkeypatch, capsys):
    class EP:
        name, value = "brokennorm", "no_such_module_of_anyone"

        def load(self):
            raise ImportError("No module named 'no_such_module_of_anyone'")

    monkeypatch.setattr(plugins.importlib.metadata, "entry_points", lambda group: [EP()])
    assert R.discover() == []
    err = capsys.readouterr().err
    assert "norm plugin 'brokennorm' (no_such_module_of_anyone) is skipped: ImportError" in err
    assert "layernorm" in NORMS and "brokennorm" not in NORMS


def test_an_entry_point_may_name_a_class_registered_under_its_name(monkeypatch):
    class Half(nn.Module):
        def __init__(self, dim, scale=0.5):
            super().__init__()
            self.scale = scale

        def forward(self, x):
            return x * self.scale

    class EP:
        name, value = "halfnorm", "tests:Half"

        def load(self):
            return Half

    monkeypatch.setattr(plugins.importlib.metadata, "entry_points", lambda group: [EP()])
    monkeypatch.setattr(R, "NORMS", dict(R.NORMS))
    monkeypatch.setattr(R, "RANGES", dict(R.RANGES))
    assert R.discover() == ["halfnorm"]
    assert torch.equal(R.build_norm("halfnorm", 4, scale=2.0)(torch.ones(4)), 2 * torch.ones(4))


def test_registration_refuses_what_would_hide_a_mistake(monkeypatch):
    monkeypatch.setattr(R, "NORMS", dict(R.NORMS))
    monkeypatch.setattr(R, "RANGES", dict(R.RANGES))
    with pytest.raises(ValueError, match="registered twice"):
        register_norm("layernorm")(lambda dim: nn.Identity())
    with pytest.raises(ValueError, match="ranges for options it lacks: \\['alpha'\\]"):
        register_norm("x1", alpha=">0")(lambda dim, beta=1.0: nn.Identity())
    with pytest.raises(ValueError, match="unknown range"):
        register_norm("x2", alpha="positive")
    with pytest.raises(ValueError, match="norm.options.numerics='x' must be one of"):
        build_norm("layernorm", 4, numerics="x")


def test_the_report_learns_a_norms_card_from_its_runs(monkeypatch):
    norm_cards.card("layernorm")  # the shipped cards, loaded once; the learned ones stay here
    monkeypatch.setattr(norm_cards, "_cards", dict(norm_cards._cards))
    norm_cards.learn(
        {"name": "plugin_only", "display": {"label": "Plug", "color": "teal", "dash": [0, [2, 1]]}}
    )
    norm_cards.learn({"name": "layernorm", "display": {"label": "not the shipped label"}})
    assert norm_cards.LABELS["plugin_only"] == "Plug"
    assert norm_cards.DASHES["plugin_only"] == (0, (2, 1))
    assert norm_cards.LABELS["layernorm"] == "LayerNorm"  # the shipped config wins
    assert norm_cards.sort_key("plugin_only") > norm_cards.sort_key("batchnorm")
