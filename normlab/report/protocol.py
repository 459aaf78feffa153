"""The test protocol a report is given: alpha and power, the margin of each measure with its
reason, the margin a cell must beat its trivial baselines by, the tasks declared outside the
learning regime, the futility floor of a sequential family, the overfitting regime's threshold and
the time-to-target settings.

A report reads these only from the ``Protocol`` value it is handed (``write_report(...,
protocol=)``, carried by its ``Grid``), never from a file of its own choosing, so the same runs and
the same protocol give the same tables in any process. ``DEFAULT`` is what a report without a
declared protocol uses: estimates and CIs, no margins (so no non-inferiority or negligible
verdict), every cell that beats its baselines at all counted as trained. A campaign or a declared
study hands its own, read from a YAML file with ``Protocol.load``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Mapping, Optional

import yaml

# how the margins' sentence names each measure's unit
UNITS = {
    "acc": "accuracy points",
    "bleu": "BLEU",
    "bpc": "bpc",
    "uas": "UAS points",
    "loss": "nats",
    "gap": "nats of generalization gap",
}
KEYS = (
    "alpha",
    "power",
    "margins",
    "margin_reasons",
    "trained_margin",
    "regime_rise_pct",
    "not_learning",
    "sequential",  # futility; looks, or first, step and max_seeds
    "time_to_target",
)


def _frozen(d: Optional[Mapping]) -> Mapping:
    return MappingProxyType(dict(d or {}))


@dataclass(frozen=True)
class Protocol:
    alpha: float = 0.05
    power: float = 0.8  # the minimum detectable effect of every row is at this power
    margins: Mapping[str, float] = field(default_factory=lambda: _frozen({}))
    margin_reasons: Mapping[str, str] = field(default_factory=lambda: _frozen({}))
    trained_margin: Mapping[str, float] = field(default_factory=lambda: _frozen({}))
    # a task whose LayerNorm valid loss rises less than this (% of its minimum) did not overfit
    regime_rise_pct: float = 1.0
    # scale -> task -> why it is outside the learning regime there
    not_learning: Mapping[str, Mapping[str, str]] = field(default_factory=lambda: _frozen({}))
    # a sequential family's futility floor (None: no such rule)
    futility: Optional[float] = None
    # the seed counts at which a sequential family's rows may gain seeds (): the seeds are fixed
    looks: tuple = ()
    # a declared study's rows left out of its family ("claim@task"): tested, uncorrected, labelled
    # exploratory (the rows its power plan said it cannot resolve)
    exploratory: frozenset = frozenset()
    # a declared study's claims (None: every claim tested is the family's); a row of another claim
    # was not declared, so it stays out of the family as an exploratory row does
    claims: Optional[frozenset] = None
    # the declared study whose family this protocol is ("": none, or the campaign's own studies),
    # and the file that declared it, whose last commit dates the declaration against the runs
    study: str = ""
    declared_in: str = ""
    reference: str = "layernorm"  # time to target: the norm whose runs set each task's target
    taus: tuple = (1, 4)  # the performance profile's range
    # the file it was read from, as captions name it ("" for DEFAULT)
    source: str = ""

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], source: str = "") -> Protocol:
        """A protocol from a mapping with ``KEYS`` (missing ones take DEFAULT's); ValueError
        naming ``source`` and the key for a value of the wrong kind."""

        def num(key, value):
            try:
                return float(value)
            except (TypeError, ValueError):
                raise ValueError(
                    f"{source or 'protocol'}: '{key}' must be a number, got {value!r}"
                ) from None

        def table(key, value, kind):
            if value is None:
                return _frozen({})
            if not isinstance(value, Mapping):
                raise ValueError(
                    f"{source or 'protocol'}: '{key}' must be a mapping, got {value!r}"
                )
            return _frozen({str(k): kind(f"{key}.{k}", v) for k, v in value.items()})

        seq = d.get("sequential") or {}
        ttt = d.get("time_to_target") or {}
        seq = seq if isinstance(seq, Mapping) else {}
        floor = seq.get("futility")
        if "looks" in seq:
            looks = tuple(int(num("sequential.looks", n)) for n in seq["looks"] or ())
        elif {"first", "step", "max_seeds"} <= set(seq):
            first, step, last = (
                int(num(f"sequential.{k}", seq[k])) for k in ("first", "step", "max_seeds")
            )
            from .stats import look_sizes  # scipy and statsmodels: only for a sequential rule

            looks = tuple(look_sizes(first, step, last))
        else:
            looks = ()
        return cls(
            alpha=num("alpha", d.get("alpha", 0.05)),
            power=num("power", d.get("power", 0.8)),
            margins=table("margins", d.get("margins"), num),
            margin_reasons=table("margin_reasons", d.get("margin_reasons"), lambda k, v: str(v)),
            trained_margin=table("trained_margin", d.get("trained_margin"), num),
            regime_rise_pct=num("regime_rise_pct", d.get("regime_rise_pct", 1.0)),
            not_learning=table(
                "not_learning",
                d.get("not_learning"),
                lambda k, v: table(k, v, lambda kk, vv: str(vv)),
            ),
            futility=None if floor is None else num("sequential.futility", floor),
            looks=looks,
            reference=str(ttt.get("reference", "layernorm")),
            taus=tuple(num("time_to_target.taus", t) for t in ttt.get("taus", (1, 4))),
            source=source,
        )

    @classmethod
    def load(cls, path: Path, shown: Optional[str] = None) -> Protocol:
        """The protocol of a YAML file (its other keys, a campaign's own, are ignored); ``shown``:
        how captions name the file (default: the path as given)."""
        try:
            d = yaml.safe_load(Path(path).read_text())
        except (OSError, yaml.YAMLError) as e:
            first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise ValueError(f"{path}: cannot read the protocol ({first}); fix the file") from None
        if not isinstance(d, Mapping):
            raise ValueError(f"{path}: a protocol is a mapping of {', '.join(KEYS)}; fix the file")
        return cls.from_dict(d, shown or str(path))

    def margin(self, metric: Optional[str]) -> Optional[float]:
        """The margin of ``metric`` (acc, bleu, bpc, uas, loss, gap): the smallest effect of
        interest; None when none is declared."""
        return self.margins.get(metric or "")

    def trained_by(self, metric: Optional[str]) -> float:
        """How much better than the best trivial baseline a cell's mean must be to count as trained."""
        return self.trained_margin.get(metric or "", 0.0)

    def is_exploratory(self, claim: str, task: str) -> bool:
        """Whether the row of ``claim`` on ``task`` is declared outside the family."""
        undeclared = self.claims is not None and claim not in self.claims
        return undeclared or f"{claim}@{task}" in self.exploratory

    def outside(self, task: str, scale: str) -> str:
        """Why ``task`` at ``scale`` is declared outside the learning regime, or ""."""
        return (self.not_learning.get(scale) or {}).get(task, "")

    @property
    def named(self) -> str:
        """How captions name where the protocol came from."""
        return self.source or "normlab's default protocol, no margins"

    def margins_sentence(self) -> str:
        if not self.margins:
            return (
                "Margins: none declared (normlab's default protocol): each row shows its estimate "
                "and 90% CI, no verdict (a protocol with margins: normlab-report --protocol FILE)."
            )
        return (
            f"Margins, the smallest effects of interest ({self.named}, each with its reason): "
            + ", ".join(f"±{v:g} {UNITS.get(k, k)}" for k, v in self.margins.items())
            + "."
        )


DEFAULT = Protocol()
