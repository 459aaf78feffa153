"""The line a run ends with: its status, and for every number the checkpoint (step) it comes from.

The test metrics are those of the selected checkpoint (best.pt), the validation number beside them
is the one that selected it, and the last evaluation's, when it is another step, is named as such:
a reader never puts the last evaluation's valid beside the best checkpoint's test.
"""

from __future__ import annotations

from pathlib import Path

from ..exitcodes import STOPPED
from ..rundir import criterion, read_curves


def _num(v) -> str:
    return f"{v:.4g}" if isinstance(v, float) else str(v)


def _last_eval(run_dir: Path, summary: dict):
    """(step, name, value) of the last validation record."""
    recs = [r for r in read_curves(Path(run_dir) / "curves.jsonl") if r.get("split") == "valid"]
    if not recs:
        return None
    last, metric = recs[-1], summary.get("metric")
    name = metric if metric in last else "loss"
    return last["step"], name, last.get(name)


def selected(summary: dict, run_dir: Path | None = None) -> str:
    """'best.pt (step 270, valid acc 77.39)': the checkpoint that was kept and why; says so when no
    evaluation finished, so there is no best.pt in ``run_dir``."""
    if run_dir is not None and not (Path(run_dir) / "checkpoints" / "best.pt").exists():
        return "no best.pt (no evaluation finished before it stopped)"
    name, value, _ = criterion(summary)
    score = f", valid {name} {_num(value)}" if value is not None else ""
    return f"best.pt (step {summary.get('best_step', '?')}{score})"


def end_line(summary: dict, run_dir: Path) -> str:
    status, steps = summary.get("status"), summary.get("steps")
    head = f"[normlab] {run_dir}: {status}"
    if status in STOPPED:
        return f"{head}: {summary.get('error')}"
    if status == "failed":
        return (
            f"{head} at step {steps}: {summary.get('error')}; traceback in {Path(run_dir) / 'traceback.txt'}; "
            "re-running the command resumes from the last checkpoint"
        )
    last = _last_eval(run_dir, summary)
    last_part = ""
    if last is not None and last[0] != summary.get("best_step"):
        last_part = f"; last evaluation (step {last[0]}): valid {last[1]} {_num(last[2])}"
    if status == "diverged":
        return (
            f"{head} at step {steps} ({summary.get('error')}); kept {selected(summary, run_dir)}"
            f"{last_part}"
        )
    metric, test = summary.get("metric"), summary.get("test") or {}
    shown = {k: test[k] for k in (metric, "loss") if k in test}
    tests = ", ".join(f"{k} {_num(v)}" for k, v in shown.items()) or "none"
    return f"{head}, {steps} steps; test {tests} from {selected(summary)}{last_part}"
