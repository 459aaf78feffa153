#!/usr/bin/env python
"""Replaced by the one study driver, ``python -m normlab.campaigns.xu2019`` (the same options;
``make reproduce-table`` and its siblings call it). Kept so that older commands still run."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from normlab.campaigns.xu2019.driver import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
