import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def data_root() -> Path:
    return Path(os.environ.get("NORMLAB_DATA", REPO.parent / "shared" / "data"))


@pytest.fixture
def data_dir():
    """The real datasets (../shared/data or $NORMLAB_DATA); tests that need them skip without."""
    root = data_root()
    if not root.is_dir():
        pytest.skip(f"real data not found at {root}: set NORMLAB_DATA to ../shared/data")
    return root
