"""A claims file: the claims a report tests as its primary family (``normlab-report --claims
FILE``; a campaign's claims are a file of this format too, read by this same loader).

```yaml
alpha: 0.05                 # optional; else the report's protocol's (normlab.report.protocol)
margins: {acc: 0.5}         # optional, per measure; else the report's protocol's
claims:
  - a: rmsnorm              # a norm's name as the runs recorded it
    b: layernorm
    form: "A ≥ B"           # or non-inferiority; "A > B" or superiority; "A overfits B" or overfit
    measure: metric         # the task's test metric (default), or gap; overfit takes loss
    margin: 0.5             # optional: this claim's smallest effect of interest
    tasks: [rt, sst2]       # optional: the tasks it is tested on (default: every task both ran)
    text: "RMSNorm is no worse than LayerNorm"   # optional
```

A bad file gets one line naming the file, the claim and the key, and what to write instead."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from ..files import read_yaml_or
from . import stats as S
from .verdicts import Claim, label

FORMS = {
    "a ≥ b": S.NONINFERIOR,
    "a >= b": S.NONINFERIOR,
    "≥": S.NONINFERIOR,
    ">=": S.NONINFERIOR,
    S.NONINFERIOR: S.NONINFERIOR,
    "a > b": S.SUPERIOR,
    ">": S.SUPERIOR,
    S.SUPERIOR: S.SUPERIOR,
    "a overfits b": S.OVERFIT,
    "overfits": S.OVERFIT,
    S.OVERFIT: S.OVERFIT,
}
MEASURES = {"metric": "metric", "gap": "gap", "overfitting": "gap", "loss": "loss"}
KEYS = {"key", "text", "a", "b", "form", "measure", "margin", "tasks", "source"}


class ClaimsFileError(ValueError):
    """A claims file that cannot be read as claims; the message is one line."""


@dataclass
class ClaimSet:
    path: Path
    claims: list[Claim]
    alpha: Optional[float]

    @property
    def name(self) -> str:
        return self.path.name


def _number(path, where: str, v, low: float, high: float) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not low < v < high:
        raise ClaimsFileError(f"{path}: {where}: {v!r} is not a number in ({low:g}, {high:g})")
    return float(v)


def _claim(path: Path, i: int, c, margins: dict, alpha: Optional[float]) -> Claim:
    where = f"claims[{i}]"
    if not isinstance(c, dict):
        raise ClaimsFileError(f"{path}: {where}: a claim is a mapping with a, b and form")
    if unknown := sorted(set(c) - KEYS):
        raise ClaimsFileError(
            f"{path}: {where}: unknown key {unknown[0]!r}; the keys are {', '.join(sorted(KEYS))}"
        )
    for k in ("a", "b", "form"):
        if not isinstance(c.get(k), str) or not c[k].strip():
            raise ClaimsFileError(
                f"{path}: {where}.{k}: missing; e.g. a: rmsnorm, b: layernorm, form: 'A ≥ B'"
            )
    if c["a"] == c["b"]:
        raise ClaimsFileError(
            f"{path}: {where}: a and b are both {c['a']!r}; a claim compares two norms"
        )
    form = FORMS.get(c["form"].strip().lower())
    if form is None:
        raise ClaimsFileError(
            f"{path}: {where}.form: {c['form']!r}; write 'A ≥ B' (non-inferiority), 'A > B' "
            "(superiority) or 'A overfits B' (overfit)"
        )
    default = "loss" if form == S.OVERFIT else "metric"
    measure = MEASURES.get(str(c.get("measure", default)).lower())
    if form == S.OVERFIT and measure != "loss":
        raise ClaimsFileError(
            f"{path}: {where}.measure: {c['measure']!r}; an overfit claim compares train and valid "
            "loss: write measure: loss, or leave it out"
        )
    if measure == "loss" and form != S.OVERFIT:
        raise ClaimsFileError(
            f"{path}: {where}.measure: loss is the overfit form's measure; write form: overfit"
        )
    if measure is None:
        raise ClaimsFileError(
            f"{path}: {where}.measure: {c['measure']!r}; write metric (the task's test metric) or gap (overfitting)"
        )
    margin = c.get("margin")
    if margin is not None:
        margin = _number(path, f"{where}.margin", margin, 0, float("inf"))
    tasks = c.get("tasks") or ()
    if isinstance(tasks, str):
        tasks = (tasks,)
    if not isinstance(tasks, (list, tuple)) or not all(isinstance(t, str) for t in tasks):
        raise ClaimsFileError(f"{path}: {where}.tasks: a list of task names, e.g. [rt, sst2]")
    sign = {S.NONINFERIOR: "≥", S.OVERFIT: "overfits more than"}.get(form, ">")
    return Claim(
        key=str(c.get("key") or f"claim{i + 1}"),
        text=str(
            c.get("text")
            or f"{label(c['a'])} {sign} {label(c['b'])}" + (" (gap)" if measure == "gap" else "")
        ),
        a=c["a"],
        b=c["b"],
        form=form,
        measure=measure,
        source=str(c.get("source") or path.name),
        margin=margin,
        alpha=alpha,
        tasks=tuple(tasks),
        margins=tuple(sorted(margins.items())),
    )


def load(path: Path) -> ClaimSet:
    """The claims of ``path``; ClaimsFileError (one line) when it cannot be read as claims."""
    path = Path(path)
    d = read_yaml_or(path, ClaimsFileError)
    if not isinstance(d, dict) or not isinstance(d.get("claims"), list) or not d["claims"]:
        raise ClaimsFileError(f"{path}: no 'claims:' list; see docs/statistics.md for the format")
    alpha = d.get("alpha")
    if alpha is not None:
        alpha = _number(path, "alpha", alpha, 0, 1)
    margins = d.get("margins") or {}
    if not isinstance(margins, dict):
        raise ClaimsFileError(f"{path}: margins: a mapping of measure to margin, e.g. {{acc: 0.5}}")
    margins = {
        str(k): _number(path, f"margins.{k}", v, 0, float("inf")) for k, v in margins.items()
    }
    claims = [_claim(path, i, c, margins, alpha) for i, c in enumerate(d["claims"])]
    keys = [c.key for c in claims]
    if dup := next((k for k in keys if keys.count(k) > 1), None):
        raise ClaimsFileError(f"{path}: two claims have key {dup!r}; give each its own key")
    return ClaimSet(path, claims, alpha)
