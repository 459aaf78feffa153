"""scripts/benchkit.py: what every benchmark's ratio rests on, the rounds and their pairing."""

import sys

from helpers import REPO

sys.path.insert(0, str(REPO / "scripts"))

import benchkit  # noqa: E402


def test_rounds_time_every_fn_on_the_same_batch_in_rotating_order_after_warmup():
    calls = []
    fns = {k: (lambda batch, k=k: calls.append((k, batch))) for k in "abc"}
    out = benchkit.rounds(fns, ["x", "y"], n=4, warmup=2)
    assert {k: len(v) for k, v in out.items()} == {"a": 4, "b": 4, "c": 4}
    assert len(calls) == 6 * 3
    per_round = [calls[3 * r : 3 * r + 3] for r in range(6)]
    # each round: one batch for all, the first fn moving one place each round
    assert [r[0][0] for r in per_round] == ["a", "b", "c", "a", "b", "c"]
    assert all(sorted(k for k, _ in r) == ["a", "b", "c"] for r in per_round)
    assert [{b for _, b in r} for r in per_round] == [{"x"}, {"y"}] * 3


def test_ratio_is_the_median_of_the_per_round_ratios_not_a_ratio_of_medians():
    a, b = [2.0, 4.0, 9.0], [1.0, 1.0, 3.0]  # per round 2, 4, 3; medians 4 / 1 would say 4
    assert benchkit.ratio(a, b) == 3.0
