"""``train.log`` in the run directory: what the job printed (stdout and stderr, warnings included),
appended by every invocation that trains the run, each under a header with its command line.

The console still gets everything; the file gets it too once the run directory exists (a job
refused on bad input writes no file). Progress-bar redraws (chunks with a carriage return) stay on
the terminal only; a log gets the training loop's per-tenth lines instead (normlab.progress).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Optional, TextIO


class _Tee:
    def __init__(self, stream: TextIO, file: TextIO):
        self.stream, self.file = stream, file

    def write(self, text: str) -> int:
        n = self.stream.write(text)
        if "\r" not in text:
            self.file.write(text)
            self.file.flush()
        return n

    def flush(self) -> None:
        self.stream.flush()

    def isatty(self) -> bool:
        return self.stream.isatty()

    def __getattr__(self, name):  # fileno, encoding, ...: the console's
        return getattr(self.stream, name)


class ConsoleLog:
    def __init__(self, path: Path, enabled: bool = True):
        self.path, self.enabled = Path(path), enabled
        self.file: Optional[TextIO] = None
        self._saved: tuple = ()

    def open(self) -> None:
        """Start copying the console to the file (the run directory exists now)."""
        if not self.enabled or self.file is not None:
            return
        self.file = open(self.path, "a", encoding="utf-8")
        self.file.write(f"--- {time.strftime('%Y-%m-%d %H:%M:%S')} {' '.join(sys.argv)}\n")
        self.file.flush()  # a job killed outright still leaves its header
        self._saved = (sys.stdout, sys.stderr)
        sys.stdout, sys.stderr = _Tee(sys.stdout, self.file), _Tee(sys.stderr, self.file)

    def __enter__(self) -> ConsoleLog:
        return self

    def __exit__(self, *exc) -> None:
        if self.file is None:
            return
        sys.stdout, sys.stderr = self._saved
        self.file.close()
        self.file = None
