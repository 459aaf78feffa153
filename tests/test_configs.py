"""The config tree: Hydra does the one merge, so --cfg job is the job, and config.yaml equals it."""

import re
import subprocess
import sys

import pytest
import yaml
from hydra.errors import ConfigCompositionException
from omegaconf import OmegaConf

from helpers import REPO, compose_cfg
from normlab.config import CONFIGS, TrainConfig, load_job
from normlab.tasks import TASKS

SCALES = ("smoke", "mini", "paper")
RUNTIME = ("paths", "logger", "device", "progress", "threads")


def test_every_shipped_task_has_a_config_and_a_preset_per_scale():
    # presets are optional for a new task (the defaults list marks them so); the shipped tasks
    # calibrate every scale, so each has all three
    assert {p.stem for p in (CONFIGS / "task").glob("*.yaml")} == set(TASKS)
    assert {p.stem for p in (CONFIGS / "scale").glob("*.yaml")} == set(SCALES)
    for name in TASKS:
        assert yaml.safe_load((CONFIGS / "task" / f"{name}.yaml").read_text())["name"] == name
        assert {p.stem for p in (CONFIGS / "preset" / name).glob("*.yaml")} == set(SCALES), name


def _keys(node, prefix=""):
    for k, v in (node or {}).items():
        yield f"{prefix}{k}"
        if isinstance(v, dict) and k not in (
            "subset",
            "limit",
            "reader",
            "bpe",
        ):  # open dicts by design
            yield from _keys(v, f"{prefix}{k}.")


@pytest.mark.parametrize("task", sorted(TASKS))
def test_presets_only_set_keys_their_task_has(task):
    """A preset merges before struct mode is on, so a typo there would add a key silently."""
    base = yaml.safe_load((CONFIGS / "task" / f"{task}.yaml").read_text())
    known = set(_keys(base)) | {f"train.{k}" for k in TrainConfig.__dataclass_fields__} | {"train"}
    for scale in SCALES:
        preset = yaml.safe_load((CONFIGS / "preset" / task / f"{scale}.yaml").read_text()) or {}
        extra = [
            k
            for k in _keys(preset)
            if k not in known
            and k.rsplit(".", 1)[0] not in ("data.subset", "data.limit", "data.reader", "data.bpe")
        ]
        assert not extra, (
            f"preset/{task}/{scale}.yaml sets keys that task/{task}.yaml lacks: {extra}"
        )


@pytest.mark.parametrize("scale", SCALES)
@pytest.mark.parametrize("task", sorted(TASKS))
def test_config_yaml_is_what_hydra_composed(task, scale, tmp_path):
    """load_job adds and changes nothing: what the run writes to config.yaml is --cfg job."""
    cfg = compose_cfg([f"task={task}", f"scale={scale}"], tmp_path)
    job = load_job(cfg)
    assert job.config == OmegaConf.to_container(cfg, resolve=True)
    assert job.setting == {}  # no override: the run path has no setting segment
    assert job.cfg.scale == scale and job.task.name == task


def test_trainer_defaults_live_in_one_place(tmp_path):
    assert not (CONFIGS / "trainer").exists()  # no yaml copy of TrainConfig's defaults
    cfg = compose_cfg(["task=rt", "scale=smoke", "task.model.layers=3"], tmp_path)
    assert cfg.task.model.d_model == 16  # preset/rt/smoke.yaml
    assert cfg.task.model.layers == 3  # the command line beats the preset
    assert cfg.task.train.probe_every == 3  # schema < task < preset
    assert cfg.task.train.adam_eps == TrainConfig.adam_eps  # only in the schema


@pytest.mark.parametrize(
    "override,match",
    [
        ("task.train.lr=fast", r"Value 'fast' of type 'str' could not be converted to Float"),
        ("task.train.lrr=1", r"Key 'lrr' not in 'TrainConfig'"),
        ("task.data.reader={split_sed:7}", r"Key 'split_sed' is not in struct"),
        ("task.data.limit={train:400}", r"Could not override 'task.data.limit'"),
        ("scale=huge", r"Could not find 'scale/huge'"),
    ],
)
def test_compose_refuses_unknown_keys_and_bad_types(override, match, tmp_path):
    with pytest.raises(ConfigCompositionException) as e:
        compose_cfg(["task=rt", override], tmp_path)
    assert re.search(match, f"{e.value} {e.value.__cause__}"), f"{e.value} {e.value.__cause__}"


def test_hydra_override_forms_mean_what_hydra_says(tmp_path):
    cfg = compose_cfg(
        [
            "task=iwslt14_de_en",
            "scale=smoke",
            "task.data.subset={train:valid,valid:X,test:Y}",
            "~task.data.limit",
            "+task.model.extra=1",
            "task.data.subset_note='a.b, c'",
        ],
        tmp_path,
    )
    assert dict(cfg.task.data.subset) == {"train": "valid", "valid": "X", "test": "Y"}
    assert "limit" not in cfg.task.data and cfg.task.model.extra == 1
    assert cfg.task.data.subset_note == "a.b, c"


def test_cfg_job_shows_the_scale_preset(tmp_path):
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "normlab.train",
            "task=rt",
            "scale=smoke",
            "task.data.reader={split_seed:7}",
            "--cfg",
            "job",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    cfg = yaml.safe_load(out)
    assert cfg["task"]["model"]["d_model"] == 16 and cfg["task"]["model"]["layers"] == 1
    assert cfg["task"]["train"]["max_steps"] == 6 and cfg["task"]["data"]["reader"] == {
        "split_seed": 7
    }
    assert cfg["scale"] == "smoke"
    assert REPO.exists()


def test_a_wheel_carries_its_configs(tmp_path):
    """A non-editable install (pip install ., a wheel) composes from the configs inside the package,
    from any working directory, with normlab's sweeper plugin found."""
    import os

    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            str(REPO),
            "-w",
            str(tmp_path / "wheel"),
        ],
        check=True,
        capture_output=True,
    )
    wheel = next((tmp_path / "wheel").glob("normlab-*.whl"))
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "-q",
            "--no-deps",
            "--target",
            str(tmp_path / "site"),
            str(wheel),
        ],
        check=True,
        capture_output=True,
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "site")}
    # -P: the working directory is not on sys.path, so normlab can only come from the wheel
    out = subprocess.run(
        [
            sys.executable,
            "-P",
            "-c",
            "import normlab, sys; print(normlab.__file__); "
            "sys.argv = ['normlab-train', 'task=rt', 'scale=smoke', '--cfg', 'job']; "
            "from normlab.train import main; main()",
        ],
        cwd=elsewhere,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert out.startswith(str(tmp_path / "site" / "normlab"))
    assert yaml.safe_load(out.split("\n", 1)[1])["task"]["model"]["d_model"] == 16
    out = subprocess.run(
        [sys.executable, "-P", "-m", "normlab.train", "task=rt", "--info", "plugins"],
        cwd=elsewhere,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "NormlabSweeper" in out
