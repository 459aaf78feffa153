"""Reading run directories: config.yaml, summary.json, curves.jsonl, and nothing else.

The report never touches live objects or checkpoints, so it works the same on a laptop copy of a
cluster's runs and on the small committed copies under results/<scale>/runs/ (see ``export``).
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Optional

import yaml

from ..config_keys import CELL_FREE_KEYS, without
from ..exitcodes import STOPPED
from ..files import RefusedYaml, atomic_write_bytes, read_yaml, whole_dir
from ..rundir import FINAL, read_curves
from . import norm_cards

# Per-layer probe keys (grad/<layer>/...) are dropped from exported curves: 12 keys per norm
# layer per probe would make the committed copies megabytes per run; grad/all/... is kept.
PER_LAYER_GRAD = re.compile(r"^grad/(?!all/)")
SKIP_DIRS = ("checkpoints", "wandb")


@dataclass
class Run:
    path: Path
    config: dict = field(default_factory=dict)
    summary: dict = field(default_factory=dict)
    _curves: Optional[list] = None

    def _get(self, key: str, default=None):
        if key in self.summary:
            return self.summary[key]
        if key in ("task", "norm"):
            return (self.config.get(key) or {}).get("name", default)
        return self.config.get(key, default)

    @property
    def task(self) -> str:
        return self._get("task", "?")

    @property
    def norm(self) -> str:
        return self._get("norm", "?")

    @property
    def seed(self) -> Optional[int]:
        return self._get("seed")

    @property
    def scale(self) -> str:
        return self._get("scale", "?")

    @property
    def status(self) -> str:
        """completed | diverged | failed, or "incomplete" for a run without a final summary (in
        progress, killed, preempted or interrupted: it resumes when its command runs again)."""
        status = self.summary.get("status", "incomplete") if self.summary else "incomplete"
        return "incomplete" if status in STOPPED else status

    @property
    def norm_options(self) -> dict:
        if "norm_options" in self.summary:
            return self.summary["norm_options"] or {}
        return (self.config.get("norm") or {}).get("options") or {}

    @property
    def setting(self) -> dict:
        """What sets this run apart from its norm's other runs in one table: the varied
        hyperparameters (summary "setting", normlab.setting); runs written before settings
        existed fall back to their norm options."""
        if "setting" in self.summary:
            return self.summary["setting"] or {}
        if self.status == "incomplete":  # still training: its row is the one its folder names
            inferred = self._setting_of_folder()
            if inferred is not None:
                return inferred
        return self.norm_options

    def _setting_of_folder(self) -> Optional[dict]:
        """A live run's setting: what a finished run of the same folder recorded (the folder is
        named by the setting), else what the folder's name says; None: its norm options decide,
        as they do for a finished sibling that recorded no setting."""
        for sibling in sorted(self.path.parent.glob("*/summary.json")):
            if sibling.parent == self.path:
                continue
            try:
                recorded = json.loads(sibling.read_text())
            except (OSError, ValueError):
                continue
            if "setting" in recorded:
                return recorded["setting"] or {}
            if recorded.get("status") in FINAL:  # a run written before settings were recorded
                return None
        return setting_of_path(self.path, self.norm)

    @property
    def metric(self) -> Optional[str]:
        return self.summary.get("metric")

    @property
    def higher_is_better(self) -> bool:
        return bool(self.summary.get("higher_is_better", True))

    @property
    def value(self) -> Optional[float]:
        """The test metric of the selected (best-valid) checkpoint; None unless completed."""
        if self.status != "completed" or not self.metric:
            return None
        v = (self.summary.get("test") or {}).get(self.metric)
        return None if v is None else float(v)

    @property
    def data(self) -> dict:
        return self.summary.get("data") or {}

    @property
    def curves(self) -> list[dict]:
        if self._curves is None:
            self._curves = read_curves(self.path / "curves.jsonl")
        return self._curves

    def fingerprint(self) -> str:
        """The config without seed and runtime keys: runs in one table cell should share it."""
        cfg = without({k: v for k, v in self.config.items() if k not in CELL_FREE_KEYS})
        return json.dumps(cfg, sort_keys=True, default=str)


_SEED_DIR = re.compile(r"seed-?\d+")
# "C=2,lr=0.001,~key": a comma starts the next item only where a key (or ~key) follows
_ITEM = re.compile(r",(?=~?[A-Za-z_][\w.]*(?:=|,|$))")


def setting_of_path(path: Path, norm: str) -> Optional[dict]:
    """The setting a run's folder names (runs/<scale>/<name>/<task>/<norm>/[<setting>/]seed<k>,
    normlab.setting.segment), as summary.json records it once the run ends; None when the path is
    not of that form or its segment cannot be read back (a shortened one)."""
    path = Path(path)
    if not _SEED_DIR.fullmatch(path.name):
        return None
    if path.parent.name == norm:
        return {}
    segment = path.parent.name
    if path.parent.parent.name != norm or "~" in segment.replace(",~", ",").lstrip("~"):
        return None
    out: dict = {}
    for item in _ITEM.split(segment.replace("%2F", "/")):
        if item.startswith("~"):
            out[item[1:]] = "~"
            continue
        key, eq, text = item.partition("=")
        if not eq:
            return None
        try:  # normlab.setting writes JSON for bools, None, lists and dicts, str() for the rest
            out[key] = json.loads(text)
        except ValueError:
            out[key] = text
    return out


def load_run(path: Path) -> Run:
    path = Path(path)
    config = read_yaml(path / "config.yaml") if (path / "config.yaml").exists() else {}
    summary = (
        json.loads((path / "summary.json").read_text()) if (path / "summary.json").exists() else {}
    )
    norm_cards.learn((config or {}).get("norm"))
    return Run(path, config or {}, summary or {})


def _is_run_dir(path: Path) -> bool:
    return (path / "summary.json").is_file() or (path / "config.yaml").is_file()


def find_runs(paths: Iterable[Path]) -> list[Run]:
    """Every run directory at or below ``paths`` (a run dir holds summary.json or config.yaml).

    Raises FileNotFoundError for a path that does not exist, so a typo never gives an empty table.
    """
    found: dict[Path, Run] = {}
    for p in map(Path, paths):
        if not p.exists():
            raise FileNotFoundError(f"{p} does not exist")
        if _is_run_dir(p):
            dirs = [p]
        else:
            # hidden folders (.submitit/, .hydra/), checkpoints/ and wandb/ (whose offline runs hold
            # a config.yaml of wandb's own) never hold runs
            dirs = sorted(
                {
                    f.parent
                    for pat in ("summary.json", "config.yaml")
                    for f in p.rglob(pat)
                    if not any(
                        s.startswith(".") or s in SKIP_DIRS for s in f.relative_to(p).parts[:-1]
                    )
                }
            )
        for d in dirs:
            if d.resolve() in found:
                continue
            try:
                found[d.resolve()] = load_run(d)
            except (UnicodeDecodeError, ValueError, yaml.YAMLError) as e:
                # one damaged run must not hide every other one's numbers: skip it, by name
                # JSON/YAML parse errors are long and name no file; the alias refusal names both
                why = str(e) if isinstance(e, RefusedYaml) else type(e).__name__
                print(
                    f"[normlab-report] warning: {d} skipped: its summary.json or config.yaml is "
                    f"unreadable ({why})",
                    file=sys.stderr,
                )
    runs = sorted(found.values(), key=lambda r: (r.task, r.norm, str(r.seed), str(r.path)))
    _warn_duplicates(runs)
    return runs


def _warn_duplicates(runs: list[Run]) -> None:
    seen: dict[tuple, Path] = {}
    for r in runs:
        key = (r.scale, r.task, r.norm, json.dumps(r.setting, sort_keys=True), r.seed)
        if key in seen:
            print(
                f"[normlab-report] warning: {r.path} and {seen[key]} are the same (scale, task, norm, "
                "seed); both are counted",
                file=sys.stderr,
            )
        seen[key] = r.path


def _round(v):
    # 7 significant digits: far below seed noise, and it halves the size of the committed copies.
    return float(f"{v:.7g}") if isinstance(v, float) else v


def export(run: Run, dest: Path) -> None:
    """A compact copy of ``run`` in ``dest``: config.yaml and summary.json byte-for-byte, curves
    without per-layer probe keys and with floats rounded to 7 significant digits. The copy is
    whole or absent (files.whole_dir), since a copy whose summary is there is taken as done."""
    with whole_dir(dest) as part:
        for name in ("config.yaml", "summary.json"):
            if (run.path / name).exists():
                atomic_write_bytes(part / name, (run.path / name).read_bytes())
        lines = []
        for rec in run.curves:
            rec = {k: _round(v) for k, v in rec.items() if not PER_LAYER_GRAD.match(k)}
            lines.append(json.dumps(rec) + "\n")
        atomic_write_bytes(part / "curves.jsonl", "".join(lines).encode())


def export_if_changed(src: Path, dest: Path) -> bool:
    """``export`` a finished run whose copy in ``dest`` is missing or has another summary; True if copied."""
    src, dest = Path(src), Path(dest)
    try:
        if json.loads((src / "summary.json").read_text()).get("status") not in FINAL:
            return False
    except (OSError, ValueError):
        return False
    if (dest / "summary.json").exists() and (dest / "summary.json").read_bytes() == (
        src / "summary.json"
    ).read_bytes():
        return False
    export(load_run(src), dest)
    return True
