"""Reports from run directories: tables, findings over seeds, figures (see report.py)."""

from .report import write_report
from .runs import Run, find_runs, load_run

__all__ = ["Run", "find_runs", "load_run", "write_report"]
