"""A job's *setting*: the hyperparameters that differ from its task/norm/scale defaults.

The setting names the run directory (``runs/mini/default/rt/adanorm/C=2,lr=0.001/seed1``), the
report's rows and the wandb run name, so that a sweep over any key gives every point its own run.
It is a diff of the job's config against the config Hydra composes for the same task, norm and
scale with no other override, so it does not matter how a value was set (``key=``, a dict
override, ``+key=``, an experiment file) and a value set to its default adds nothing.
Excluded: the grid keys (task, norm, scale, seed), the experiment ``name``, runtime keys that
do not change a result (paths, logger, device, progress, threads, compile) and the nested keys
that cannot (config_keys.IGNORED_KEYS: the norm's display card, checkpoint_every).
"""

from __future__ import annotations

import functools
import hashlib
import json
from typing import Any

from omegaconf import OmegaConf

from .config_keys import IGNORED_KEYS, RUNTIME_KEYS

DELETED = "~"  # a key of the defaults that the job removed (~key on the command line)
# The grid keys, the experiment name, and the keys a resumed run may change (config_keys.RUNTIME_KEYS:
# paths, logger, device, progress, threads, compile; compiled == eager is tested).
EXCLUDED = {"task.name", "norm.name", "scale", "seed", "name", *RUNTIME_KEYS, *IGNORED_KEYS}
MAX_SEGMENT = 120


@functools.lru_cache(maxsize=64)
def _defaults_json(task: str, norm: str, scale: str) -> str:
    from .config_keys import compose

    cfg = compose([f"task={task}", f"norm={norm}", f"scale={scale}"])
    # Resolved key by key: runtime keys such as paths may interpolate ${hydra:...}, absent here.
    return json.dumps(
        {
            k: OmegaConf.to_container(cfg[k], resolve=True)
            if OmegaConf.is_config(cfg[k])
            else cfg[k]
            for k in cfg
            if k not in EXCLUDED
        }
    )


def _plain(config: dict) -> dict:
    return {k: v for k, v in config.items() if k not in EXCLUDED and k != "hydra"}


def _flatten(node: Any, prefix: str, out: dict) -> dict:
    if isinstance(node, dict) and node:
        for k, v in node.items():
            key = f"{prefix}.{k}" if prefix else str(k)
            if key not in EXCLUDED:
                _flatten(v, key, out)
    else:
        out[prefix] = node
    return out


def varied(config: dict) -> dict:
    """{dotted key: value} for every leaf that differs from the defaults (DELETED if removed)."""
    task, norm = config["task"]["name"], config["norm"]["name"]
    base = _flatten(json.loads(_defaults_json(task, norm, str(config["scale"]))), "", {})
    job = _flatten(_plain(config), "", {})
    out = {k: v for k, v in job.items() if k not in base or base[k] != v}
    out.update(
        {k: DELETED for k in base if k not in job and not any(j.startswith(k + ".") for j in job)}
    )
    return dict(sorted(out.items()))


def short_names(setting: dict, config: dict) -> dict:
    """Each dotted key by its shortest suffix that names one leaf of ``config``: lr, C, eval.max_len."""
    leaves = list(_flatten(config, "", {})) + list(setting)
    out = {}
    for key in setting:
        parts = key.split(".")
        for n in range(1, len(parts) + 1):
            suffix = ".".join(parts[-n:])
            if sum(1 for k in set(leaves) if k == suffix or k.endswith("." + suffix)) == 1:
                break
        out[suffix] = setting[key]
    return out


def _value(v: Any) -> str:
    if v == DELETED:
        return ""
    if isinstance(v, bool) or v is None:
        return json.dumps(v)
    if isinstance(v, (list, dict)):
        return json.dumps(v, separators=(",", ":"))
    return str(v)


def label(setting: dict, config: dict) -> str:
    """``C=2,lr=0.001`` (``~key`` for a removed key); '' when nothing varies."""
    items = [
        f"~{k}" if v == DELETED else f"{k}={_value(v)}"
        for k, v in short_names(setting, config).items()
    ]
    return ",".join(items)


def segment(config: dict) -> str:
    """The run-path segment for ``config`` ('' or 'C=2,lr=0.001/'), safe as one folder name."""
    text = label(varied(config), config).replace("/", "%2F")
    if len(text) > MAX_SEGMENT:  # a folder name stays readable and well under the 255-byte limit
        digest = hashlib.sha1(text.encode()).hexdigest()[:10]
        text = f"{text[: MAX_SEGMENT - 11]}~{digest}"
    return f"{text}/" if text else ""


def job_part(cfg) -> dict:
    """The part of a composed config (with or without its hydra node) that a setting is made of,
    resolved; runtime keys, which may interpolate ${hydra:...}, are left out unresolved."""
    return {
        k: OmegaConf.to_container(cfg[k], resolve=True) if OmegaConf.is_config(cfg[k]) else cfg[k]
        for k in cfg
        if k != "hydra" and k not in EXCLUDED - {"scale"}
    }


def _resolver(*, _root_) -> str:
    part = job_part(_root_)
    try:
        return segment(part)
    except Exception:  # noqa: BLE001 - e.g. norm.name=bogus: no defaults to diff against
        # Hydra makes the run directory before normlab checks the config, which then refuses it
        # in one line (and removes the folder); a failure here was Hydra's 169-line dump instead.
        digest = hashlib.sha1(json.dumps(part, sort_keys=True, default=str).encode()).hexdigest()
        return f"unlisted~{digest[:10]}/"


def folder(value: Any) -> str:
    """``value`` as one folder of the run path. Hydra makes the run directory before normlab
    checks the config; a value that cannot be one folder (a '/', '..', NUL, over MAX_SEGMENT
    bytes, not UTF-8) becomes 'invalid~<digest>' so that the check, not mkdir, says what is wrong
    (one line, exit 2, the folder removed) and nothing is made outside the run root."""
    text = str(value)
    try:
        raw = text.encode()
    except UnicodeEncodeError:  # a lone surrogate: bytes of the command line that are not UTF-8
        raw = b""
    if (
        raw
        and "/" not in text
        and "\0" not in text
        and text not in (".", "..")
        and len(raw) <= MAX_SEGMENT
    ):
        return text
    return "invalid~" + hashlib.sha1(text.encode("utf-8", "surrogatepass")).hexdigest()[:10]


# ${normlab.setting:} and ${normlab.folder:...} in hydra.run.dir / hydra.sweep.* (configs/hydra/default.yaml).
OmegaConf.register_new_resolver("normlab.setting", _resolver, replace=True, use_cache=False)
OmegaConf.register_new_resolver("normlab.folder", folder, replace=True, use_cache=False)
