"""The job's typed schema: every key the trainer and the runner read, with its one default.

A leaf module (it imports nothing of normlab), so the config loader, the runner, the trainer and
the report all take a default from here instead of writing it again. ``normlab.config`` registers
both dataclasses with Hydra's ConfigStore: ``JobConfig`` is the first entry of
``configs/train.yaml``'s defaults list, ``TrainConfig`` sits under every ``task.train``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, List, Optional

# The values a few keys may take, here so that the config loader checks them without importing
# the trainer (normlab.run) that acts on them.
SCHEDULES = ("constant", "inverse_sqrt", "linear", "cosine")
PRECISIONS = ("fp32", "tf32", "bf16", "fp16")


def check_accel(precision, compile, deterministic) -> None:
    """Raise ValueError naming the key for a bad top-level precision, compile or deterministic."""
    if precision not in PRECISIONS:
        raise ValueError(f"precision={precision!r}: must be one of {list(PRECISIONS)}")
    if not isinstance(compile, bool):
        raise ValueError(f"compile={compile!r}: must be true or false")
    if deterministic not in (True, False, "auto"):
        raise ValueError(f"deterministic={deterministic!r}: must be true, false or auto")


@dataclass
class TrainConfig:
    """The trainer's keys and their defaults, in one place; every task's ``train:`` section and
    the command line override them (``task.train.lr=1e-3``)."""

    optimizer: str = "adam"  # adam | adamw (weight decay never on 1-D tensors)
    lr: float = 5e-4
    betas: List[float] = field(default_factory=lambda: [0.9, 0.98])
    adam_eps: float = 1e-8
    weight_decay: float = 0.0
    schedule: str = (
        "inverse_sqrt"  # constant | inverse_sqrt | linear | cosine, after linear warm-up
    )
    warmup_steps: int = 0
    warmup_init_ratio: float = 0.0  # lr at step 0 as a fraction of the peak (fairseq: 1e-7/lr)
    min_lr_ratio: float = 0.0
    clip_norm: float = 0.0  # 0 = no clipping (the official IWSLT recipe)
    max_epochs: int = 1
    max_steps: int = 0  # > 0 overrides max_epochs
    eval_every: int = 0  # steps; 0 = at the end of each epoch
    log_every: int = 10
    checkpoint_every: int = 0  # extra checkpoints between evaluations
    patience: int = 0  # evaluations without improvement before stopping; 0 = off
    select: str = "metric"  # choose the best checkpoint on the valid "metric" or "loss"
    diverge_loss: float = 1e4  # a train loss above this (or NaN/inf) ends the run as diverged
    probe_every: int = 0  # log Theorem-1 gradient statistics every N steps; 0 = off
    scurve: int = 0  # at the end, the S-curve record and figure of this many norm layers; 0 = off
    update_freq: int = 1  # micro-batches per optimizer step (fairseq --update-freq)


@dataclass
class JobConfig:
    """The top level of a job's config. The config groups (task, scale, norm, logger, paths) are
    filled by the defaults list; the runtime options below keep these defaults unless a file or
    the command line sets them. Values are checked by normlab.config.load_job (with messages that
    name the fix), so the options a user may mistype are typed Any here."""

    task: Any = None
    scale: Optional[str] = None  # the scale group (configs/scale/*.yaml) sets it
    norm: Any = None
    logger: Any = None
    paths: Any = None
    seed: Any = 1
    # selection | evaluation: set by the study drivers (configs/study/seeds.yaml), in summary.json
    seed_role: Optional[str] = None
    # the hash of the confirmatory study's declaration the run belongs to (normlab.study.
    # declaration): set by the study driver, in config.yaml and summary.json
    declaration: Optional[str] = None
    name: str = (
        "default"  # experiment name: groups runs on disk (runs/<scale>/<name>/) and in wandb
    )
    device: str = "auto"  # auto | cpu | cuda | cuda:N
    # true | false | auto (= true on CPU: bitwise resume; false on CUDA: ~30% faster, docs "GPU")
    deterministic: Any = "auto"
    precision: str = "fp32"  # fp32 | tf32 | bf16 | fp16 (autocast; fp16 adds dynamic loss scaling)
    compile: Any = False  # torch.compile the model for training (kernels cached in paths.cache_dir)
    threads: Any = 0  # torch threads per job; 0 = torch's default (1 when jobs run in parallel)
    progress: Any = True  # tqdm progress bar
    # auto: an unfinished run goes on from its newest readable checkpoint; restart: it starts over
    # from step 0 (old checkpoints kept in checkpoints.old-<time>/)
    resume: str = "auto"


def default(key: str):
    """The schema's default of a top-level key (for configs read back from older run folders)."""
    return JobConfig.__dataclass_fields__[key].default


# |alpha x| beyond this counts as saturated for a DyT-like norm: tanh'(2) = 0.071, erf'(2) = 0.021
# (the probe records the share, normlab.norms.probe; the report shows it)
SATURATION_KNEE = 2.0
