#!/usr/bin/env python
"""Write (or --check) the README's generated results section from the committed tables.

    python scripts/readme_results.py          # rewrite the section between its markers
    python scripts/readme_results.py --check  # exit 1 when the README differs from the tables

Run it after committing new tables (scripts/commit_results.sh does), so every number the README
quotes is the tables' (normlab/report/readme.py).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from normlab.report.readme import replace, section  # noqa: E402


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "--check", action="store_true", help="compare only; exit 1 when the README is stale"
    )
    p.add_argument(
        "--root", type=Path, default=REPO, help="the checkout whose README and results/ are read"
    )
    a = p.parse_args(argv)
    path = a.root / "README.md"
    try:
        new = replace(path.read_text(), section(a.root))
    except ValueError as e:
        print(f"readme_results: {path}: {e}", file=sys.stderr)
        return 2
    if a.check:
        if new != path.read_text():
            print(
                f"readme_results: {path}'s results section differs from the committed tables; "
                "run python scripts/readme_results.py",
                file=sys.stderr,
            )
            return 1
        return 0
    path.write_text(new)
    print(f"readme_results: wrote the results section of {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
