"""Reports from run directories: tables, findings over seeds, figures (see report.py), under the
test protocol they are given (protocol.py)."""

from .protocol import DEFAULT, Protocol
from .report import write_report
from .runs import Run, find_runs, load_run

__all__ = ["DEFAULT", "Protocol", "Run", "find_runs", "load_run", "write_report"]
