"""``train.log`` in the run directory: what the job printed (stdout and stderr, warnings included),
appended by every invocation that trains the run, each under a header with its command line.

The console still gets everything; the file gets it too once the run directory exists (a job
refused on bad input writes no file). Progress-bar redraws (chunks with a carriage return) stay on
the terminal only; a log gets the training loop's per-tenth lines instead (normlab.progress).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Optional, TextIO


class _Tee:
    def __init__(self, stream: TextIO, file: TextIO):
        self.stream, self.file = stream, file
        self.lost = False  # the console went away: a closed pipe (| head), a hung-up terminal
        self.file_lost = False

    def _console(self, call) -> None:
        if self.lost:
            return
        try:
            call()
        except (OSError, ValueError):  # the run goes on; the file keeps the log
            self.lost = True

    def write(self, text: str) -> int:
        self._console(lambda: self.stream.write(text))
        if "\r" not in text and not self.file_lost:
            try:
                self.file.write(text)
                self.file.flush()
            except OSError:  # a full disk: the console keeps the lines; the checkpoint decides
                self.file_lost = True
        return len(text)

    def flush(self) -> None:
        self._console(self.stream.flush)

    def isatty(self) -> bool:
        return not self.lost and self.stream.isatty()

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
        file = open(self.path, "a", encoding="utf-8")
        try:
            file.write(f"--- {time.strftime('%Y-%m-%d %H:%M:%S')} {' '.join(sys.argv)}\n")
            file.flush()  # a job killed outright still leaves its header
        except OSError:
            file.close()
            raise
        self.file, self._saved = file, (sys.stdout, sys.stderr)
        sys.stdout, sys.stderr = _Tee(sys.stdout, self.file), _Tee(sys.stderr, self.file)

    def __enter__(self) -> ConsoleLog:
        return self

    def __exit__(self, *exc) -> None:
        if self.file is None:
            return
        tees = (sys.stdout, sys.stderr)
        sys.stdout, sys.stderr = (
            open(os.devnull, "w") if isinstance(t, _Tee) and t.lost else saved
            for t, saved in zip(tees, self._saved)
        )  # a lost console stays quiet: Python's flush at exit would print a BrokenPipeError
        try:
            self.file.close()
        except OSError:  # the disk filled: the run's status says what happened, not this
            pass
        self.file = None
