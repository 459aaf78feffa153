"""How many seeds would the primary family's unresolved rows take? A simulation under the effects
and spreads observed so far.

    python scripts/sequential_seeds.py [results/mini] [--studies 4000] [--seed 0]

Reads the primary study's findings.json (each row's mean difference and SD of the per-seed
differences), draws every tested row's differences from a normal with those, runs the declared
procedure (normlab/configs/study/claims.yaml ``sequential``: looks, alpha / K per look, Holm over
the rows; normlab.report.sequential.sequential_family) and prints per row the chance it resolves
(one of its hypotheses rejected by Holm) within the last look and the expected seeds it uses, then the
expected seeds per resolved row. The observed effects are estimates from 5 seeds: read the output
as a plan, not a promise.
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
from normlab.report import stats as S  # noqa: E402
from normlab.report.sequential import sequential_family  # noqa: E402


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("folder", nargs="?", type=Path, default=ROOT / "results" / "mini")
    p.add_argument("--studies", type=int, default=4000)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args(argv)
    path = a.folder / "findings.json"
    try:
        rows = json.loads(path.read_text())["findings"]
    except (OSError, ValueError, KeyError) as e:
        print(
            f"sequential_seeds: {path}: cannot read the findings ({e}); write the folder's report first",
            file=sys.stderr,
        )
        return 2
    forms_of = {c.key: c.form for c in CLAIMS}
    tested = [r for r in rows if not r["decided"] and r["sd"] is not None and r["diff"] is not None]
    if not tested:
        print(f"sequential_seeds: {path}: no tested row", file=sys.stderr)
        return 2
    sizes = look_sizes()
    forms = [forms_of[r["claim"]] for r in tested]
    margins = np.array([r["margin"] for r in tested], float)
    # each row's streams: an overfitting row's train difference, then its valid difference
    two = [f == S.OVERFIT for f in forms]
    mean = np.array([[r.get("diff_train") or 0.0, r["diff"]] if t else [r["diff"], 0.0]
                     for r, t in zip(tested, two)], float)  # fmt: skip
    sd = np.array([[r.get("sd_train") or 1.0, r["sd"]] if t else [r["sd"], 1.0]
                   for r, t in zip(tested, two)], float)  # fmt: skip
    rng = np.random.default_rng(a.seed)
    d = mean[None, :, None, :] + sd[None, :, None, :] * rng.standard_normal(
        (a.studies, len(tested), sizes[-1], 2)
    )
    out = sequential_family(d, forms, margins, sizes, protocol().alpha)
    used, resolved = out.used, out.resolved
    print(
        f"{len(tested)} tested rows of {path}, looks at {sizes} seeds, {a.studies} simulated "
        "studies under the observed mean differences and SDs:"
    )
    print(f"{'claim':<30} {'task':<15} {'diff':>8} {'sd':>8} {'P(resolved)':>12} {'E[seeds]':>9}")
    for i, r in enumerate(tested):
        print(
            f"{r['claim']:<30} {r['column']:<15} {r['diff']:>+8.3f} {r['sd']:>8.3f} "
            f"{resolved[:, i].mean():>12.2f} {used[:, i].mean():>9.1f}"
        )
    per = used[resolved].mean() if resolved.any() else float("nan")
    print(
        f"expected rows resolved: {resolved.sum(1).mean():.1f} of {len(tested)}; expected seeds "
        f"per resolved row: {per:.1f}; expected seeds in all (per norm pair, summed over rows): "
        f"{used.sum(1).mean():.0f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
