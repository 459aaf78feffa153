"""What a family of tested claims adds to a report, whoever declared the claims (a campaign, or a
claims file the user gives ``normlab-report --claims``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

from .tables import Table


@dataclass
class Findings:
    """A family's tables (the first one carries the sentence on cells that did not train), the
    index's lines on them, how they were tested, and the files of its own it writes into the
    report's folder (``files(out)``: their paths)."""

    tables: list[Table] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)
    method: str = ""
    files: Optional[Callable[[Path], list[Path]]] = None
