"""Which declared study a results folder holds, for scripts/commit_results.sh.

    python scripts/study_of_folder.py results/mini-placement   # -> placement mini 0 results/mini ...

Prints "study scale member folders...": the study and scale the folder's name gives
(normlab.campaigns.xu2019.family.locate), member 1 when claims.yaml's family of tests holds the
folder, then the family's folders at that scale. Exit 2 for a folder of no declared study.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

from normlab.campaigns.xu2019.family import folders, locate


def main(argv: Optional[list[str]] = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    where = locate(Path(args[0])) if len(args) == 1 else None
    if where is None:
        print(
            f"{' '.join(args) or '(no folder)'}: no declared study's results folder (results/<scale>"
            ", -tuned, -enwik8-prenorm, -placement; normlab/campaigns/xu2019/studies.py: out)",
            file=sys.stderr,
        )
        return 2
    family = list(folders(where[1]).values())
    member = any(Path(args[0]).resolve() == Path(f).resolve() for f in family)
    print(*where, int(member), *family)
    return 0


if __name__ == "__main__":
    sys.exit(main())
