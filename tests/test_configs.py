"""The config tree stays in sync with the code: trainer defaults, task registry, scales."""
from dataclasses import asdict

import pytest
import yaml

from helpers import REPO, compose_cfg
from normlab.config import ConfigError, TrainConfig, resolve
from normlab.tasks import TASKS

CONFIGS = REPO / "configs"


def test_trainer_defaults_match_dataclass():
    on_disk = yaml.safe_load((CONFIGS / "trainer" / "default.yaml").read_text())
    assert on_disk == asdict(TrainConfig())


def test_every_task_has_a_config_with_three_scales():
    files = {p.stem for p in (CONFIGS / "task").glob("*.yaml")}
    assert files == set(TASKS)
    for name in TASKS:
        cfg = yaml.safe_load((CONFIGS / "task" / f"{name}.yaml").read_text())
        assert cfg["name"] == name
        assert {"smoke", "mini", "paper"} <= set(cfg["scales"]), name


def test_scale_preset_then_command_line_wins(tmp_path):
    cfg = compose_cfg(["task=rt", "scale=smoke", "task.model.layers=3"], tmp_path)
    job = resolve(cfg, ["task=rt", "scale=smoke", "task.model.layers=3"])
    assert job.task.model.d_model == 16          # from scales.smoke
    assert job.task.model.layers == 3            # the command line beats the preset
    assert job.task.train.probe_every == 3       # trainer defaults < task < scale
    assert job.task.train.optimizer == "adam"    # from configs/trainer/default.yaml


def test_unknown_scale_names_valid_ones(tmp_path):
    cfg = compose_cfg(["task=rt", "scale=huge"], tmp_path)
    with pytest.raises(ConfigError, match=r"scale='huge'.*\['mini', 'paper', 'smoke'\]"):
        resolve(cfg, [])
