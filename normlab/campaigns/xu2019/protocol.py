"""The campaign's declarations in one file (normlab/configs/study/claims.yaml): the test protocol
its reports are given (alpha, margins, gates: normlab.report.Protocol) and the study settings only
the campaign reads (its primary study, the results folders of its family, the seeds a row may
gain). Read once per process; every report of the campaign is handed the protocol as a value."""

from __future__ import annotations

import dataclasses
import functools
from types import MappingProxyType

import yaml

from ...report import Protocol
from ...report.aggregate import Grid
from ...report.roles import CONFIGS

FILE = CONFIGS / "study" / "claims.yaml"
# how captions name the file
SHOWN = "normlab/configs/study/claims.yaml"
REQUIRED = ("alpha", "margins", "regime_rise_pct", "trained_margin", "power", "family", "primary")


@functools.lru_cache(maxsize=1)
def settings() -> dict:
    """The file's every key, the campaign's own (primary, family, sequential) among them."""
    d = yaml.safe_load(FILE.read_text())
    for key in REQUIRED:
        if key not in d:
            raise ValueError(f"{FILE}: missing key '{key}'")
    return d


@functools.lru_cache(maxsize=1)
def protocol() -> Protocol:
    """The protocol every report of the campaign's runs is given."""
    return Protocol.from_dict(settings(), SHOWN)


def grid(runs: list, axis: tuple = ()) -> Grid:
    """A report grid of ``runs`` under the campaign's protocol."""
    return Grid(runs, axis, protocol())


def of_declaration(declaration) -> Protocol:
    """The protocol of a confirmatory study: the campaign's, with what its declaration
    (normlab.study.declaration) fixed before its data: alpha, margins, futility floor, looks, the
    rows left out of its family, its name; the margins' reasons stay the campaign's, the file
    named is the declaration."""
    d, base = declaration.content, protocol()
    return dataclasses.replace(
        base,
        alpha=float(d.get("alpha", base.alpha)),
        margins=MappingProxyType({k: float(v) for k, v in d["margins"].items()}),
        futility=float(d["futility"]) if d.get("futility") is not None else None,
        looks=tuple(int(n) for n in d["looks"]),
        exploratory=frozenset(str(r) for r in d.get("exploratory") or ()),
        claims=frozenset(str(c) for c in d["claims"]),
        study=str(d["study"]),
        declared_in=str(declaration.path),
        source=f"{declaration.path} (declaration {declaration.hash[:12]})",
    )
