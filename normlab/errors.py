"""The errors a user can fix. Bad input (ConfigError, DataError) is raised before anything is
written to a run directory; every message names the file, line or key and says how to fix it."""


class ConfigError(ValueError):
    """A bad config key or value."""


class DataError(ValueError):
    """Missing or malformed data."""


class CheckpointError(RuntimeError):
    """Every checkpoint of a run directory is unreadable: the run neither resumes nor silently
    starts over (``resume=restart`` asks for that)."""


class ComposeError(ValueError):
    """Hydra could not compose the config of a command that composes it itself (normlab-tune);
    ``lines``: normlab's hints, then Hydra's message in one line; ``code``: the exit status (1, or
    2 for a config group choice that does not exist)."""

    def __init__(self, lines: list[str], code: int = 1):
        super().__init__("\n".join(lines))
        self.lines, self.code = lines, code
