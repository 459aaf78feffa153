"""A task and a logger added the two ways a researcher would: inside normlab (one module plus one
config each, and nothing else edited) and from the user's own installed package (entry points and
a Hydra search-path plugin). Each trains, logs, reports and has its trivial baseline computed."""

from __future__ import annotations

import filecmp
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import REPO

TASK = '''"""Blobs: two Gaussian blobs in 8 dimensions told apart by an MLP with a norm (GENERATED)."""
import torch
import torch.nn.functional as F
from torch import nn

from normlab.tasks import Task, register_task
from normlab.tasks.base import classification_eval
from normlab.tasks.trivial import majority_baseline

SIZES = {"train": 256, "valid": 128, "test": 128}


@register_task("blobs")
class Blobs(Task):
    metric, higher_is_better, unit = "acc", True, "examples"

    def setup(self):
        g = torch.Generator().manual_seed(int(self.cfg.data.seed))
        self.splits = {}
        for s, n in SIZES.items():
            y = (torch.rand(n, generator=g) < 0.7).long()  # 70/30, so the majority is not 50%
            x = torch.randn(n, 8, generator=g) + (2.0 * y - 1.0)[:, None]
            self.splits[s] = (x, y)
        self.data_info = {"source": "generated", "subset": "GENERATED blobs", "sizes": SIZES}

    def build_model(self, norm):
        d = int(self.cfg.model.dim)
        return nn.Sequential(nn.Linear(8, d), norm(d), nn.ReLU(), nn.Linear(d, 2))

    def train_batches(self, epoch, seed):
        g = torch.Generator().manual_seed(1000 * seed + epoch)
        x, y = self.splits["train"]
        order = torch.randperm(len(y), generator=g)
        return [(x[i], y[i]) for i in order.split(int(self.cfg.data.batch_size))]

    def loss(self, model, batch):
        x, y = batch
        return F.cross_entropy(model(x), y), y.numel()

    def evaluate(self, model, split):
        return classification_eval(model, [self.splits[split]], next(model.parameters()).device)

    def trivial_baselines(self):
        return majority_baseline({s: y for s, (_, y) in self.splits.items()})
'''
TASK_YAML = """name: blobs
data: {seed: 0, batch_size: 32}
model: {dim: 16}
train: {lr: 0.01, schedule: constant, max_epochs: 3}
"""
LOGGER = '''"""A second copy of every record, one JSON line each, closed with the exit code."""
import json

from normlab.loggers import register_logger


class Copy:
    def __init__(self, path):
        self.file = open(path, "a")

    def log(self, metrics, step):
        self.file.write(json.dumps({"step": step, **metrics}) + "\\n")

    def close(self, exit_code=0, summary=None):
        self.file.write(json.dumps({"closed": exit_code, "status": (summary or {}).get("status")}))
        self.file.close()


@register_logger("copylog")
def build(run):
    return Copy(run.run_dir / run.options["copylog_file"])
'''
LOGGER_YAML = "copylog: true\ncopylog_file: copy.jsonl\n"


def _run(args, cwd, env):
    out = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, f"{args}\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}"
    return out


def _train_log_and_report(tmp_path: Path, env: dict) -> None:
    run = tmp_path / "run"
    _run(
        [
            sys.executable,
            "-m",
            "normlab.train",
            "task=blobs",
            "norm=rmsnorm",
            "logger=[copylog]",
            "scale=smoke",  # blobs has no presets: the task config's values are used
            "progress=false",
            f"paths.root={tmp_path / 'runs'}",
            f"hydra.run.dir={run}",
        ],
        tmp_path,
        env,
    )
    summary = json.loads((run / "summary.json").read_text())
    assert summary["status"] == "completed" and summary["test"]["acc"] > 70.0, summary
    # the logger saw every record curves.jsonl holds, and was closed with the run's outcome
    *copied, closed = (run / "copy.jsonl").read_text().splitlines()
    curves = [json.loads(x) for x in (run / "curves.jsonl").read_text().splitlines()]
    assert [json.loads(x) for x in copied] == curves and len(curves) > 3
    assert json.loads(closed) == {"closed": 0, "status": "completed"}
    out = tmp_path / "report"
    _run(
        [sys.executable, "-m", "normlab.make_report", "--no-figures", "--out", str(out), str(run)],
        tmp_path,
        env,
    )
    assert "blobs" in (out / "summary.md").read_text()
    # the task's own trivial baseline, on its own (generated) test split: 70/30 labels
    base = [x for x in (out / "baselines.md").read_text().splitlines() if x.startswith("| blobs")]
    assert len(base) == 1 and "majority class (train's: 1)" in base[0], base


def _env(tmp_path, pythonpath):
    return {
        **os.environ,
        "PYTHONPATH": str(pythonpath),
        "NORMLAB_CACHE": str(tmp_path / "cache"),
        "NORMLAB_DATA": str(tmp_path / "data"),
        "HYDRA_FULL_ERROR": "1",
    }


def test_a_task_and_a_logger_inside_normlab_are_one_module_and_one_config_each(tmp_path):
    pkg = tmp_path / "normlab"
    shutil.copytree(REPO / "normlab", pkg, ignore=shutil.ignore_patterns("__pycache__"))
    (pkg / "tasks" / "blobs.py").write_text(TASK)
    (pkg / "configs" / "task" / "blobs.yaml").write_text(TASK_YAML)
    (pkg / "loggers" / "copylog.py").write_text(LOGGER)
    (pkg / "configs" / "logger" / "copylog.yaml").write_text(LOGGER_YAML)

    def added(cmp: filecmp.dircmp, where: str = "") -> list[str]:
        assert not cmp.left_only and not cmp.diff_files, (where, cmp.left_only, cmp.diff_files)
        return [f"{where}{f}" for f in cmp.right_only] + [
            x for name, sub in cmp.subdirs.items() for x in added(sub, f"{where}{name}/")
        ]

    cmp = filecmp.dircmp(REPO / "normlab", pkg, ignore=["__pycache__"])
    assert sorted(added(cmp)) == [
        "configs/logger/copylog.yaml",
        "configs/task/blobs.yaml",
        "loggers/copylog.py",
        "tasks/blobs.py",
    ]
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "blobs").mkdir()  # generated data: the folder only keys the baseline cache
    _train_log_and_report(tmp_path, _env(tmp_path, tmp_path))


@pytest.mark.slow
def test_a_task_and_a_logger_from_the_users_own_package(tmp_path):
    # installed as pip would leave it: the package, its dist-info with the entry points, and a
    # Hydra search-path plugin in the hydra_plugins namespace package that adds its configs
    site = tmp_path / "site"
    mine = site / "mylab"
    for d in ("configs/task", "configs/logger"):
        (mine / d).mkdir(parents=True)
    (mine / "__init__.py").write_text("")
    (mine / "configs" / "__init__.py").write_text("")
    (mine / "blobs.py").write_text(TASK)
    (mine / "copylog.py").write_text(LOGGER)
    (mine / "configs" / "task" / "blobs.yaml").write_text(TASK_YAML)
    (mine / "configs" / "logger" / "copylog.yaml").write_text(LOGGER_YAML)
    plugin = site / "hydra_plugins" / "mylab_searchpath"
    plugin.mkdir(parents=True)
    (plugin / "__init__.py").write_text(
        "from hydra.core.config_search_path import ConfigSearchPath\n"
        "from hydra.plugins.search_path_plugin import SearchPathPlugin\n\n\n"
        "class MylabSearchPath(SearchPathPlugin):\n"
        "    def manipulate_search_path(self, search_path: ConfigSearchPath) -> None:\n"
        '        search_path.append(provider="mylab", path="pkg://mylab.configs")\n'
    )
    info = site / "mylab-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: mylab\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(
        "[normlab.tasks]\nblobs = mylab.blobs\n\n[normlab.loggers]\ncopylog = mylab.copylog\n"
    )
    (tmp_path / "data" / "blobs").mkdir(parents=True)
    _train_log_and_report(tmp_path, _env(tmp_path, site))
