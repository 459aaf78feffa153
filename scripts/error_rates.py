#!/usr/bin/env python
"""Each verdict class's family-wise error rate, simulated for the primary family's real shape.

    python scripts/error_rates.py [results/mini] [--studies 100000] [--seed 0]

Reads the primary study's findings.json for its tested rows (each row's claim form, margin and SD
of its per-seed differences), then simulates studies at the boundary of each class's null
hypotheses, where its error is likeliest, and runs the declared procedure (normlab/configs/study/
claims.yaml: looks at 5, 10, 15, 20 seeds, each hypothesis's p = K x its smallest p over the looks,
Holm over every hypothesis of every row, a row stops gaining seeds once one of them is rejected;
normlab.report.sequential.sequential_family):
- false support: non-inferiority rows at −margin, superiority rows at 0, overfitting rows with
  their valid-loss difference at 0 (and a clear train-loss one);
- false refutation: the same boundaries, the overfitting rows' train-loss difference at 0 too;
- false negligibility: every row at +margin (the overfitting rows' valid loss too).
The futility rule only withholds seeds, and a rule that withholds seeds can only remove
rejections (tests/test_sequential.py), so these rates bound the driver's with its futility rule.
Prints each rate with its Monte-Carlo standard error; docs/statistics.md quotes the output.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from normlab.campaigns.xu2019.findings import CLAIMS, look_sizes  # noqa: E402
from normlab.campaigns.xu2019.protocol import protocol  # noqa: E402
from normlab.report import hypotheses as H  # noqa: E402
from normlab.report import stats as S  # noqa: E402
from normlab.report.sequential import sequential_family  # noqa: E402

CHUNK = 5000


def boundary(rng, forms, margins, n, studies, where):
    """[studies, R, n, 2] per-seed differences in SD units at ``where``'s boundary (see above)."""
    R = len(forms)
    ni = np.array([f == S.NONINFERIOR for f in forms])
    ov = np.array([f == S.OVERFIT for f in forms])
    shift = margins if where == H.NEGLIGIBLE else np.where(ni, -margins, 0.0)
    d = rng.standard_normal((studies, R, n, 2))
    d[..., 0] += shift[None, :, None]  # a one-stream row's only stream; an overfitting row's valid
    d[..., 1] += np.where(ov & (where == H.SUPPORT), 3.0, 0.0)[None, :, None]
    # an overfitting row reads its train stream first
    return np.where(ov[None, :, None, None], d[..., ::-1], d)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("folder", nargs="?", type=Path, default=ROOT / "results" / "mini")
    p.add_argument("--studies", type=int, default=100_000)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args(argv)
    path = a.folder / "findings.json"
    try:
        rows = json.loads(path.read_text())["findings"]
    except (OSError, ValueError, KeyError) as e:
        print(f"error_rates: {path}: cannot read the findings ({e})", file=sys.stderr)
        return 2
    forms_of = {c.key: c.form for c in CLAIMS}
    tested = [r for r in rows if not r["decided"] and r.get("hyps") and r["sd"]]
    if not tested:
        print(f"error_rates: {path}: no tested row", file=sys.stderr)
        return 2
    forms = [forms_of[r["claim"]] for r in tested]
    # the margin in units of the row's per-seed SD: what the equivalence test's error depends on
    margins = np.array([r["margin"] / r["sd"] for r in tested], float)
    sizes, alpha = look_sizes(), protocol().alpha
    m = sum(len(H.classes(f)) for f in forms)
    print(
        f"{len(tested)} tested rows of {path} ({m} hypotheses), looks at {sizes} seeds, "
        f"alpha {alpha}, {a.studies} simulated studies per class:"
    )
    rng = np.random.default_rng(a.seed)
    for where in H.PRECEDENCE:
        hits = 0
        for start in range(0, a.studies, CHUNK):
            k = min(CHUNK, a.studies - start)
            d = boundary(rng, forms, margins, sizes[-1], k, where)
            out = sequential_family(d, forms, margins, sizes, alpha)
            hits += int((out.verdict == H.PRECEDENCE.index(where)).any(axis=1).sum())
        rate = hits / a.studies
        se = np.sqrt(rate * (1 - rate) / a.studies)
        print(
            f"  false {where:<11} {rate:.4f} ± {se:.4f} (MC SE)  {'≤' if rate <= alpha else '>'} {alpha}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
