import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def data_root() -> Path:
    """normlab's one default: $NORMLAB_DATA, else ./data (the tests run from the repository)."""
    return Path(os.environ.get("NORMLAB_DATA") or REPO / "data")


MISSING = "set NORMLAB_DATA to the data folder (../shared/data beside a clone here), or link it as ./data"


@pytest.fixture
def data_dir():
    """The real datasets ($NORMLAB_DATA or ./data); tests that need them skip without."""
    root = data_root()
    if not root.is_dir():
        pytest.skip(f"real data not found at {root}: {MISSING}")
    return root
