"""bench_fairseq.py's results as text: the table of per-pair ratios and each target's verdict.
Every ratio is normlab / fairseq within one pair of neighbouring processes (the machine's speed
drifts between minutes); a row gives their median and range."""

from __future__ import annotations

import statistics

from benchkit import markdown_table

# (config, batches) -> (measure, direction, bound): the targets this benchmark is held to
TARGETS = {
    ("mini", "identical"): ("s_per_update", "<=", 0.90),
    ("6+6", "identical"): ("s_per_update", "<=", 1.00),
    ("mini", "own"): ("target_tokens_per_s", ">=", 1.10),
    ("6+6", "own"): ("target_tokens_per_s", ">=", 1.00),
}
HOW = {
    "cpu": "fp32, CPU, one thread each",
    "cuda": "bf16 autocast (fp32 weights), one GPU each in turn",
}
MODES = {"identical": "identical batches", "own": "each its own batching"}


def med(rows: list[dict], key: str) -> float:
    return statistics.median(r[key] for r in rows)


def ratios(res: dict, key: str) -> list[float]:
    """normlab / fairseq of each repetition's pair of neighbouring processes."""
    return [n[key] / f[key] for n, f in zip(res["normlab"], res["fairseq"])]


def spread(rs: list[float]) -> str:
    """The median of the paired ratios, and their range: what one more run could show."""
    return f"**{statistics.median(rs):.3f}** ({min(rs):.3f}-{max(rs):.3f})"


def table(results: dict) -> str:
    rows = []
    for name, res in results.items():
        for mode in ("identical", "own"):
            r = res[mode]
            nl, fs = r["normlab"], r["fairseq"]
            step, tok = ratios(r, "s_per_update"), ratios(r, "target_tokens_per_s")
            rows.append(
                [
                    name,
                    MODES[mode],
                    f"{med(nl, 's_per_update'):.4f}",
                    f"{med(fs, 's_per_update'):.4f}",
                    spread(step),
                    f"{sum(x < 1 for x in step)} of {len(step)}",
                    f"{med(nl, 'target_tokens_per_s'):.0f}",
                    f"{med(fs, 'target_tokens_per_s'):.0f}",
                    spread(tok),
                    f"{med(nl, 'target_tokens_per_update'):.0f} / {med(fs, 'target_tokens_per_update'):.0f}",
                    f"{100 * med(nl, 'padding_share'):.1f}% / {100 * med(fs, 'padding_share'):.1f}%",
                    f"{med(nl, 'startup_s'):.2f} / {med(fs, 'startup_s'):.2f}",
                ]
            )
    return markdown_table(
        [
            "config",
            "batches",
            "normlab s/update",
            "fairseq s/update",
            "normlab / fairseq s/update (range over pairs)",
            "pairs where normlab is faster",
            "normlab target tok/s",
            "fairseq target tok/s",
            "normlab / fairseq tok/s (range)",
            "target tokens per update (normlab / fairseq)",
            "padding (normlab / fairseq)",
            "start-up s (normlab / fairseq)",
        ],
        rows,
    )


def verdicts(results: dict) -> list[str]:
    """Each target against the median paired ratio, and in how many pairs it held."""
    lines = []
    for (name, mode), (key, op, bound) in TARGETS.items():
        if name not in results:
            continue
        rs = ratios(results[name][mode], key)
        held = [x <= bound if op == "<=" else x >= bound for x in rs]
        m = statistics.median(rs)
        met = m <= bound if op == "<=" else m >= bound
        unit = "s/update" if key == "s_per_update" else "target tok/s"
        lines.append(
            f"- {name}, {MODES[mode]}: normlab / fairseq {unit} {m:.3f} {op} {bound:.2f}: "
            f"{'met' if met else 'NOT met'} (held in {sum(held)} of {len(held)} pairs)"
        )
    for name, res in results.items():
        nl = [r["startup_s"] for m in res.values() for r in m["normlab"]]
        fs = [r["startup_s"] for m in res.values() for r in m["fairseq"]]
        faster = sum(n < f for n, f in zip(nl, fs))
        lines.append(
            f"- {name}, start-up: normlab {statistics.median(nl):.2f} s, fairseq "
            f"{statistics.median(fs):.2f} s: {'met' if faster == len(nl) else 'NOT met'} "
            f"(normlab first to its first update in {faster} of {len(nl)} pairs)"
        )
    return lines
