"""How reports show each norm: its label, colour, dash and row order, declared with the norm.

A norm's config (``normlab/configs/norm/<name>.yaml``, or a plugin package's) carries a
``display:`` section; every run records it in its config.yaml. The report reads the shipped
configs first, then learns the norms it does not know from the runs it loads, so a plugin norm is
labelled in tables and figures without normlab knowing it (and without its package installed).
A norm with no card is shown by its name, in a neutral style, after the norms that have one.
Read without torch: normlab-report starts without it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Optional

import yaml

from ..config_keys import CONFIGS

FIELDS = ("label", "color", "dash", "order")
_cards: dict[str, dict] = {}
_loaded = {"shipped": False}


def _shipped() -> dict[str, dict]:
    if not _loaded["shipped"]:
        for path in sorted((CONFIGS / "norm").glob("*.yaml")):
            cfg = yaml.safe_load(path.read_text()) or {}
            # the shipped config wins over what older runs recorded: one label per norm per table
            _cards[cfg.get("name", path.stem)] = _clean(cfg.get("display"))
        _loaded["shipped"] = True
    return _cards


def _clean(display: Any) -> dict:
    return {k: display[k] for k in FIELDS if k in display} if isinstance(display, dict) else {}


def learn(norm_config: Optional[dict]) -> None:
    """Add the card a run recorded (config.yaml ``norm``) for a norm not known yet."""
    if not isinstance(norm_config, dict) or not isinstance(norm_config.get("name"), str):
        return
    card = _clean(norm_config.get("display"))
    if card and norm_config["name"] not in _shipped():
        _cards[norm_config["name"]] = card


def card(name: str) -> dict:
    return _shipped().get(name, {})


def sort_key(name: str) -> tuple:
    """Norms with an ``order`` by it, then the rest by name."""
    order = card(name).get("order")
    return (0, order, name) if isinstance(order, (int, float)) else (1, 0, name)


def _tuple(dash: Any):
    """YAML has no tuples: ``[0, [3, 1]]`` is matplotlib's dash tuple ``(0, (3, 1))``."""
    return tuple(_tuple(d) for d in dash) if isinstance(dash, list) else dash


class _Field(Mapping):
    """A read-only {norm: value} view of one field of the cards (norms lacking it are absent)."""

    def __init__(self, field: str):
        self.field = field

    def __getitem__(self, name: str):
        value = card(name).get(self.field)
        if value is None:
            raise KeyError(name)
        return _tuple(value)

    def __iter__(self) -> Iterator[str]:
        return iter([n for n, c in _shipped().items() if c.get(self.field) is not None])

    def __len__(self) -> int:
        return sum(1 for _ in self)


LABELS: Mapping[str, str] = _Field("label")
COLORS: Mapping[str, str] = _Field("color")
DASHES: Mapping[str, object] = _Field("dash")
