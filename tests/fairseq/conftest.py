import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
USER_DIR = REPO / "normlab" / "integrations" / "fairseq" / "normlab_norms"
sys.path.insert(0, str(REPO / "tests"))


@pytest.fixture(scope="session")
def iwslt14():
    root = (
        Path(os.environ.get("NORMLAB_DATA", REPO.parent / "shared" / "data"))
        / "iwslt14_de_en"
        / "tmp"
    )
    if not (root / "valid.de").exists():
        pytest.skip(f"IWSLT14 data not found at {root}: set NORMLAB_DATA")
    return root
