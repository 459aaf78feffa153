"""Whether a config on disk and a job's config are the same experiment: the keys whose values
differ, less the runtime-only keys (a resumed run may change them) and the keys added since the
run was written, at the value that does what the code did before them."""

from __future__ import annotations

from .config_keys import IGNORED_KEYS, RUNTIME_KEYS
from .schema import default

# Keys added after runs were already on disk, with the value that does what the code did before
# them: a run directory written without such a key is the same experiment when the job sets it to
# that value, so upgrading normlab does not refuse to resume (or skip) older runs.
ADDED_KEYS = {
    "precision": default("precision"),
    "task.train.update_freq": 1,
    "task.data.batch_multiple": 1,
    "task.model.placement": None,
    "task.model.layernorm_scaling": False,
    "task.model.mixln_post_layers": None,
    "task.model.embed_norm": None,
    "task.model.final_norm": None,
    "task.model.qk_norm": False,
    "task.model.hybrid_first_pre": False,
    "norm.affine": None,
    "task.train.scurve": 0,
    "norm.sites": {},
}
_MISSING = object()


def same_experiment(a: dict, b: dict) -> list[str]:
    """Dotted keys whose values differ, ignoring runtime-only keys and those that cannot change a
    result (config_keys.IGNORED_KEYS); ``a`` is the config on disk."""
    diffs = []

    def walk(x, y, prefix):
        if isinstance(x, dict) and isinstance(y, dict):
            for k in sorted(set(x) | set(y)):
                if (not prefix and k in RUNTIME_KEYS) or f"{prefix}{k}" in IGNORED_KEYS:
                    continue
                walk(x.get(k, _MISSING), y.get(k, _MISSING), f"{prefix}{k}.")
        elif x is _MISSING and ADDED_KEYS.get(prefix.rstrip("."), _MISSING) == y:
            return
        elif (None if x is _MISSING else x) != (None if y is _MISSING else y):
            diffs.append(prefix.rstrip("."))

    walk(a, b, "")
    return diffs
