"""The run directory contract: config.yaml, curves.jsonl, summary.json, checkpoints/.

Every file is written atomically (normlab.files; the checkpoints here, with the same temp file +
rename) so a kill at any moment leaves either the old or the new version, never half of one.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import warnings
from pathlib import Path
from typing import Optional

from .errors import CheckpointError
from .files import atomic_write_bytes

# The statuses of a run that is over: its summary is final and the run is never trained again
# (exitcodes.STOPPED and "failed" runs resume or retry).
FINAL = ("completed", "diverged")


def _warn(message: str) -> None:
    print(f"normlab: warning: {message}", file=sys.stderr)


def read_curves(path: Path) -> list[dict]:
    """Records of curves.jsonl. A torn last line (killed mid-append) is dropped; any other line
    that is not a JSON record (damaged, ``null``, not UTF-8) is skipped with a warning naming it,
    and the records after it are kept."""
    path = Path(path)
    if not path.exists():
        return []
    raw = path.read_bytes()
    lines = raw.split(b"\n")
    records = []
    for i, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            rec = None
        if isinstance(rec, dict):
            records.append(rec)
        elif i < len(lines):  # the last piece, unterminated, is a torn append: dropped quietly
            _warn(f"{path}:{i}: not a JSON record; skipped")
    return records


def read_summary(path: Path) -> dict:
    """summary.json, or {} with a warning naming it when it cannot be read: a damaged summary
    counts as none (the run resumes from its checkpoints and writes it again)."""
    path = Path(path)
    if not path.exists():
        return {}
    try:
        summary = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        _warn(f"{path} is unreadable ({type(e).__name__}); taken as no summary")
        return {}
    if not isinstance(summary, dict):
        _warn(f"{path} is not a JSON object; taken as no summary")
        return {}
    return summary


class Curves:
    """Append-only JSONL of metric records; on resume, cut back to the checkpoint's step."""

    def __init__(self, path: Path):
        self.path = Path(path)

    def truncate_after(self, step: int) -> None:
        """Keep the records a resumed run will not write again: those up to the checkpoint's
        step, minus test records (the final test runs again after training)."""
        keep = [
            r
            for r in read_curves(self.path)
            if r.get("step", 0) <= step and r.get("split") != "test"
        ]
        atomic_write_bytes(self.path, "".join(json.dumps(r) + "\n" for r in keep).encode())

    def append(self, record: dict) -> None:
        with open(self.path, "a") as f:
            f.write(json.dumps(record) + "\n")
            f.flush()


class Checkpoints:
    """last.pt written atomically; the previous one kept as prev.pt until the new one is whole."""

    def __init__(self, run_dir: Path):
        self.dir = Path(run_dir) / "checkpoints"
        self.before_replace = None  # test hook (NORMLAB_FAULT=...:save:...): the riskiest moment
        self.loaded: Optional[Path] = None  # the file load() read

    @property
    def last(self) -> Path:
        return self.dir / "last.pt"

    def save(self, state: dict, name: str = "last.pt") -> None:
        import torch  # here, not at the top: normlab-report reads run dirs without torch (~1 s)

        self.dir.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.dir, prefix=f".{name}.", suffix=".tmp")
        try:
            os.chmod(tmp, 0o644)
            with os.fdopen(fd, "wb") as f:
                torch.save(state, f)
                f.flush()
                os.fsync(f.fileno())  # the bytes reach the disk before the rename can
            target = self.dir / name
            if name == "last.pt":
                if target.exists():
                    os.replace(target, self.dir / "prev.pt")
                if self.before_replace is not None:
                    self.before_replace()
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def load(self, name: str = "last.pt") -> Optional[dict]:
        """The newest readable checkpoint, or None when there is none. An unreadable last.pt falls
        back to prev.pt with a warning; when every checkpoint there is unreadable, CheckpointError
        names each file and why (training from step 0 instead would hide the loss)."""
        import torch

        candidates = [self.dir / name] + ([self.dir / "prev.pt"] if name == "last.pt" else [])
        bad = []
        for path in candidates:
            if not path.exists():
                continue
            try:
                ck = torch.load(path, map_location="cpu", weights_only=True)
            except Exception as e:  # truncated or corrupt file (a full disk, a copy cut short)
                bad.append(
                    f"{path.name} ({type(e).__name__}: {str(e).splitlines()[0][:160] if str(e) else ''})"
                )
                continue
            self.loaded = path
            if bad:
                step = (ck.get("state") or {}).get("step", ck.get("step", "?"))
                warnings.warn(
                    f"checkpoint {bad[0]} in {self.dir} is unreadable; falling back to {path.name} "
                    f"(step {step})",
                    stacklevel=2,
                )
            return ck
        if bad:
            raise CheckpointError(
                f"{self.dir}: every checkpoint is unreadable: {'; '.join(bad)}. Restore them, "
                "or re-run with resume=restart to train this run again from step 0 (the files "
                "are kept aside)"
            )
        return None

    def set_aside(self, *files: Path) -> Optional[Path]:
        """Move checkpoints/ to checkpoints.old-<time>/ (resume=restart), with ``files`` of the old
        attempt (its curves and summary) inside it: nothing is deleted. None when there is nothing."""
        files = tuple(Path(f) for f in files if Path(f).exists())
        if not self.dir.exists() and not files:
            return None
        import time

        target = self.dir.with_name(f"checkpoints.old-{time.strftime('%Y%m%d-%H%M%S')}")
        if self.dir.exists():
            os.replace(self.dir, target)
        else:
            target.mkdir()
        for f in files:
            os.replace(f, target / f.name)
        return target

    def remove_temp(self) -> None:
        """Delete half-written temp files left by a killed run (never read, only in the way)."""
        for p in self.dir.glob(".*.tmp"):
            p.unlink(missing_ok=True)


def criterion(summary: dict) -> tuple[str, Optional[float], bool]:
    """(name, value, higher is better) of what selected the run's checkpoint on validation: the
    score the trainer kept (best_valid_score: the metric, or -loss where task.train.select=loss,
    as IWSLT and PTB at mini) read back as the metric or the loss it came from. The tuned grid
    chooses lrs with the same criterion, so one rule picks both the checkpoint and the lr.
    A summary records what selected (selected_by); one written before it did is read from its
    numbers: the metric when the kept score equals the best valid metric, else the loss."""
    metric = summary.get("metric")
    higher = bool(summary.get("higher_is_better", True))
    score = summary.get("best_valid_score")
    best = summary.get("best_valid") or {}
    by = summary.get("selected_by")
    if by is None:
        value = best.get(metric)
        if value is not None and (score is None or score == (value if higher else -value)):
            return metric, float(value), higher
        return "loss", None if score is None else -float(score), False
    if by == "loss":
        return "loss", -float(score) if score is not None else best.get("loss"), False
    return by, float(score if higher else -score) if score is not None else best.get(by), higher
