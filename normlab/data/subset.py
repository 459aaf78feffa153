"""Training-set caps: a smaller real subset of a task's train split, so a small model reaches its
validation optimum (and goes past it) inside a CPU budget (the overfitting regime of docs/calibration.md).

A cap is a config key (``task.data.train_limit``, ``task.data.train_bytes``, ...) whose value 0
means "all". ``check_cap`` validates it with an error that names the key and the available
count; ``seeded_subset`` picks which examples a cap keeps. Every task that applies a cap says so
in ``data_info`` (its ``subset`` sentence and ``sizes``), so every table labels the subset.
"""

from __future__ import annotations

import torch

from ..errors import ConfigError


def check_cap(value, key: str, available: int, what: str, minimum: int = 1) -> int:
    """``value`` as an int cap in [minimum, available], or 0 (no cap); ConfigError otherwise."""
    try:
        cap = int(value or 0)
    except (TypeError, ValueError):
        raise ConfigError(f"{key} must be an integer (0 = all {what}), got {value!r}") from None
    if isinstance(value, float) and value != cap:
        raise ConfigError(f"{key} must be an integer (0 = all {what}), got {value!r}")
    if cap < 0:
        raise ConfigError(f"{key} must be >= 0 (0 = all {what}), got {cap}")
    if cap and cap < minimum:
        raise ConfigError(
            f"{key}={cap} is too small: at least {minimum:,} {what} are needed (0 = all)"
        )
    if cap > available:
        raise ConfigError(
            f"{key}={cap:,} is more than the {available:,} {what} available; "
            f"lower it or set 0 for all"
        )
    return cap


def seeded_subset(total: int, size: int, seed: int) -> torch.Tensor:
    """Indices (sorted, so the file order is kept) of ``size`` of ``total`` examples drawn at random
    with ``seed``: the same subset on every machine and for every norm and run seed."""
    perm = torch.randperm(total, generator=torch.Generator().manual_seed(int(seed)))
    return perm[:size].sort().values
