"""The two kinds of bad input. Both are raised before anything is written to a run directory, and
both messages name the file, line or key and say how to fix it."""


class ConfigError(ValueError):
    """A bad config key or value."""


class DataError(ValueError):
    """Missing or malformed data."""
