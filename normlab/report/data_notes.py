"""The data note of a table column: which data its runs trained on (source, subset or the full
dataset, split sizes), read from the runs' summaries: every caption says what its numbers rest
on."""

from __future__ import annotations

import json
import re

from .runs import Run

LIMIT_SEED = re.compile(r"train_limit_seed=(\d+)")
NOTE_KEYS = ("source", "sizes", "train_pairs_over_max_len", "train_pairs_read")


def drawn_by(draws: dict[str, set]) -> str:
    """Which subsets the runs drew: a subset seed that is its runs' own (train_limit_seed=run) is
    "the run's seed"; one drawn by runs of other seeds (a fixed draw) names them, so a fixed
    subset 0 of seed 1's selection runs is not read as a run seed 0."""
    if len(draws) == 1:
        return next(iter(draws))
    own = sorted((d for d, seeds in draws.items() if seeds <= {int(d), None}), key=int)
    parts = [f"the run's seed: {', '.join(own)}"] if own else []
    for d in sorted(set(draws) - set(own), key=int):
        seeds = sorted(s for s in draws[d] if s is not None)
        parts.append(f"{d} for seed {', '.join(map(str, seeds))}")
    return "; ".join(parts)


def data_note(runs: list[Run]) -> str:
    """What data a column's runs used: source, subset (or full), split sizes; from the summaries."""
    # With train_limit_seed=run every seed draws its own subset: one note for them, naming seeds.
    # note -> subset seed -> the seeds of the runs that drew it
    draws: dict[str, dict[str, set]] = {}
    for r in runs:
        if r.data:
            # keyed by what the note prints: a vocabulary built from each seed's own subset
            # differs by seed and must not split one note into one per seed
            key = json.dumps(
                {
                    **{k: r.data[k] for k in NOTE_KEYS if k in r.data},
                    "subset": LIMIT_SEED.sub("train_limit_seed={}", r.data.get("subset") or ""),
                },
                sort_keys=True,
            )
            drawn = draws.setdefault(key, {})
            for subset_seed in LIMIT_SEED.findall(r.data.get("subset") or ""):
                drawn.setdefault(subset_seed, set()).add(r.seed)
    if not draws:
        return "data unknown (no summary)"
    notes = []
    for s in sorted(draws):
        d = json.loads(s)
        d["subset"] = (
            d["subset"].replace("train_limit_seed={}", "train_limit_seed=" + drawn_by(draws[s]))
            if d["subset"]
            else None
        )
        sizes = dict(d.get("sizes") or {})
        dropped = d.get("train_pairs_over_max_len")
        if isinstance(dropped, int) and dropped and isinstance(sizes.get("train"), int):
            # Summaries written before translation counted used pairs have sizes.train = pairs read.
            read = d.get("train_pairs_read", sizes["train"])
            sizes["train"] = (
                f"{read - dropped:,} used ({read:,} read, {dropped:,} over train_max_len dropped)"
            )
        order = sorted(sizes, key=lambda k: (["train", "valid", "test"] + [k]).index(k))
        size = " / ".join(
            f"{k} {sizes[k]:,}" if isinstance(sizes[k], int) else f"{k} {sizes[k]}"
            for k in order
            if isinstance(sizes[k], (int, str))
        )
        notes.append(
            f"{d.get('source', '?')}; {d.get('subset') or 'full dataset'}"
            + (f" ({size})" if size else "")
        )
    return " | ".join(notes)
