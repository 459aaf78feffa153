"""A confirmatory study's declaration: everything decided before its data, in one file, frozen by
its hash.

```yaml
study: confirm                    # its name; runs/<scale>/<study>/ and results/<scale>-<study>
claims: [ln_simple_no_worse, ...] # the claims it tests (keys of the campaign's claims file)
alpha: 0.05
margins: {acc: 0.2, bleu: 0.1, bpc: 0.02, uas: 0.1, loss: 0.02}
looks: [5, 10, 15, 20]            # seeds at each look; the first look's seeds are `seeds`
futility: 0.10                    # a row stops gaining seeds below this chance to resolve
seeds: [101, 102, 103, 104, 105]  # fresh evaluation seeds, in the order they are trained
tasks: [rt, sst2]
norms: [layernorm, layernorm_simple]
lrs: {rt: {layernorm: 0.00566, layernorm_simple: 0.00566}, sst2: {...}}
pilot: results/mini               # the SDs the power plan reads
exploratory: [adanorm_improves@rt] # the rows the plan cannot resolve (claim@task), from --plan
```

The hash is of the file's content (sha256 of its parsed mapping, so a comment or a re-indent is no
change); every run of the study records it (``declaration=<hash>``), and the driver refuses to add
runs to a study whose runs carry another: a declaration cannot move after its data. Bad input
(a margin ≤ 0, an unknown task, norm or claim, looks that do not increase, a missing lr) gets one
line naming the file and the key, before anything is written.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Collection, Iterable, Optional

import yaml

from ..files import read_yaml_or

KEYS = {
    "study",
    "claims",
    "alpha",
    "margins",
    "looks",
    "futility",
    "seeds",
    "tasks",
    "norms",
    "lrs",
    "pilot",
    "exploratory",
}
REQUIRED = ("study", "claims", "margins", "looks", "seeds", "tasks", "norms", "lrs")


class DeclarationError(ValueError):
    """A declaration that cannot be used; the message is one line naming the file and key."""


@dataclass(frozen=True)
class Declaration:
    path: Path
    content: dict
    hash: str

    def __getitem__(self, key: str):
        return self.content[key]

    def lr(self, task: str, norm: str) -> float:
        return float(self.content["lrs"][task][norm])


def content_hash(content: dict) -> str:
    """sha256 of the parsed mapping in canonical JSON: what is declared, not how it is written."""
    canon = json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canon.encode()).hexdigest()


def _number(path: Path, key: str, v, low: float, high: float, closed_low: bool = False) -> float:
    ok = isinstance(v, (int, float)) and not isinstance(v, bool)
    if not ok or not (low <= v if closed_low else low < v) or not v < high:
        bound = f"[{low:g}, {high:g})" if closed_low else f"({low:g}, {high:g})"
        raise DeclarationError(f"{path}: {key}: {v!r} is not a number in {bound}")
    return float(v)


def _names(path: Path, key: str, v, known: Optional[Collection[str]]) -> list[str]:
    if not isinstance(v, list) or not v or not all(isinstance(x, str) for x in v):
        raise DeclarationError(f"{path}: {key}: a non-empty list of names, e.g. [rt, sst2]")
    if len(set(v)) != len(v):
        raise DeclarationError(f"{path}: {key}: {v} names one twice")
    if known is not None and (bad := [x for x in v if x not in known]):
        raise DeclarationError(
            f"{path}: {key}: {bad[0]!r} is not known; known: {', '.join(sorted(known))}"
        )
    return v


def load(
    path: Path,
    tasks: Optional[Collection[str]] = None,
    norms: Optional[Collection[str]] = None,
    claims: Optional[Collection[str]] = None,
) -> Declaration:
    """The declaration in ``path``, checked against the ``tasks``, ``norms`` and ``claims`` that
    exist (None: not checked); DeclarationError (one line) when it cannot be used."""
    path = Path(path)
    d = read_yaml_or(path, DeclarationError)
    if not isinstance(d, dict):
        raise DeclarationError(
            f"{path}: a declaration is a mapping; see normlab/study/declaration.py"
        )
    if unknown := sorted(set(d) - KEYS):
        raise DeclarationError(
            f"{path}: unknown key {unknown[0]!r}; the keys are {', '.join(sorted(KEYS))}"
        )
    if missing := [k for k in REQUIRED if k not in d]:
        raise DeclarationError(f"{path}: {missing[0]}: missing (every declaration names it)")
    if not isinstance(d["study"], str) or not d["study"].strip() or "/" in d["study"]:
        raise DeclarationError(f"{path}: study: a name without '/', e.g. confirm")
    _names(path, "claims", d["claims"], claims)
    _names(path, "tasks", d["tasks"], tasks)
    _names(path, "norms", d["norms"], norms)
    _number(path, "alpha", d.get("alpha", 0.05), 0, 1)
    _number(path, "futility", d.get("futility", 0.0), 0, 1, closed_low=True)
    if not isinstance(d["margins"], dict) or not d["margins"]:
        raise DeclarationError(
            f"{path}: margins: a mapping of measure to margin, e.g. {{acc: 0.2}}"
        )
    for k, v in d["margins"].items():
        _number(path, f"margins.{k}", v, 0, float("inf"))
    looks = d["looks"]
    if (
        not isinstance(looks, list)
        or not looks
        or not all(isinstance(n, int) and not isinstance(n, bool) and n >= 2 for n in looks)
    ):
        raise DeclarationError(f"{path}: looks: a list of seed counts of at least 2, e.g. [5, 10]")
    if any(b <= a for a, b in zip(looks, looks[1:])):
        raise DeclarationError(f"{path}: looks: {looks} must increase from look to look")
    seeds = d["seeds"]
    if not isinstance(seeds, list) or not all(
        isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in seeds
    ):
        raise DeclarationError(f"{path}: seeds: a list of seeds (integers), e.g. [101, 102]")
    if len(set(seeds)) != len(seeds) or len(seeds) != looks[-1]:
        raise DeclarationError(
            f"{path}: seeds: {len(seeds)} distinct seeds declared; the last look needs "
            f"{looks[-1]} (every seed the study may train, in the order it trains them)"
        )
    for i, row in enumerate(d.get("exploratory") or []):
        claim, _, task = str(row).partition("@")
        if claim not in d["claims"] or task not in d["tasks"]:
            raise DeclarationError(
                f"{path}: exploratory[{i}]: {row!r} is no declared row; write claim@task, e.g. "
                f"{d['claims'][0]}@{d['tasks'][0]}"
            )
    lrs = d["lrs"]
    for task in d["tasks"]:
        for norm in d["norms"]:
            v = (lrs.get(task) or {}).get(norm) if isinstance(lrs, dict) else None
            if v is None:
                raise DeclarationError(f"{path}: lrs.{task}.{norm}: missing (each norm's own lr)")
            _number(path, f"lrs.{task}.{norm}", v, 0, float("inf"))
    return Declaration(path, d, content_hash(d))


def recorded(run_dirs: Iterable[Path]) -> dict[str, list[Path]]:
    """hash -> the run directories whose config records it (``declaration``), over ``run_dirs``
    that hold a config.yaml; runs recording none are listed under ""."""
    out: dict[str, list[Path]] = {}
    for d in run_dirs:
        try:
            cfg = yaml.safe_load((Path(d) / "config.yaml").read_text()) or {}
        except (OSError, yaml.YAMLError):
            continue
        out.setdefault(str(cfg.get("declaration") or ""), []).append(Path(d))
    return out


def check_unchanged(decl: Declaration, run_dirs: Iterable[Path]) -> None:
    """DeclarationError when a run of the study records another declaration: the file changed
    after the study's first run."""
    other = {h: ds for h, ds in recorded(run_dirs).items() if h != decl.hash}
    if other:
        h, ds = next(iter(other.items()))
        was = h[:12] if h else "none"
        raise DeclarationError(
            f"{decl.path}: changed after the study's first run ({len(ds)} run(s), e.g. {ds[0]}, "
            f"record declaration {was}; the file now hashes to {decl.hash[:12]}): restore it "
            "(git checkout the file), or declare a new study in a new file"
        )
