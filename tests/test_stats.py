"""normlab.report.stats: Holm and Benjamini-Hochberg against a textbook example worked by hand, the
sign test against exact binomial counts, and the corrected verdicts of the findings table."""
import pytest

from normlab.report.stats import adjust, bh, holm, sign_test

# Benjamini & Hochberg (1995), section 4: the 15 p-values of their example. At 0.05 Bonferroni and
# Holm reject the 3 smallest, BH the 4 smallest (their text).
BH95 = [0.0001, 0.0004, 0.0019, 0.0095, 0.0201, 0.0278, 0.0298, 0.0344, 0.0459, 0.3240, 0.4262,
        0.5719, 0.6528, 0.7590, 1.0000]


def test_holm_matches_hand_computation():
    # By hand: (m - i + 1) * p_(i), made non-decreasing, capped at 1.
    hand = [15 * 0.0001, 14 * 0.0004, 13 * 0.0019, 12 * 0.0095, 11 * 0.0201, 10 * 0.0278,
            10 * 0.0278, 10 * 0.0278,           # 9 * 0.0298 = 0.268 and 8 * 0.0344 = 0.275 lie below 0.278
            7 * 0.0459, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0]
    assert holm(BH95) == pytest.approx(hand, abs=1e-12)
    assert sum(p < 0.05 for p in holm(BH95)) == 3
    # order of the input does not matter
    rev = holm(BH95[::-1])
    assert rev[::-1] == pytest.approx(hand, abs=1e-12)


def test_bh_matches_hand_computation():
    # By hand: m / i * p_(i), then the running minimum from the largest p down.
    raw = [15 / (i + 1) * p for i, p in enumerate(BH95)]
    hand = [min(raw[i:]) for i in range(15)]
    assert hand[3] == pytest.approx(0.0095 * 15 / 4) and hand[5] == pytest.approx(0.0298 * 15 / 7)
    assert bh(BH95) == pytest.approx(hand, abs=1e-12)
    assert sum(q < 0.05 for q in bh(BH95)) == 4


def test_adjust_skips_rows_without_a_test():
    h, b = adjust([0.01, None, 0.04, float("nan")])
    assert h[1] is None and b[3] is None
    assert h[0] == pytest.approx(0.02) and h[2] == pytest.approx(0.04)   # m = 2, not 4
    assert b[0] == pytest.approx(0.02) and b[2] == pytest.approx(0.04)   # min(2 * 0.01, 0.04)


def test_sign_test_exact_binomial():
    # Better on 1 of 8 tasks: P(X <= 1) = (1 + 8) / 2^8; P(X >= 1) = 1 - 1/2^8.
    r = sign_test([-0.19, 0.05, -2.5, -0.02, -0.53, -0.76, -0.07, -0.41])
    assert (r["wins"], r["losses"], r["n"]) == (1, 7, 8)
    assert r["p_less"] == pytest.approx(9 / 256) and r["p_greater"] == pytest.approx(255 / 256)
    # ties are dropped; 5 of 5 better: p = 1/32
    r = sign_test([1.0, 2.0, 0.0, 3.0, 0.5, 0.1])
    assert r["n"] == 5 and r["p_greater"] == pytest.approx(1 / 32)
    assert sign_test([0.0])["p_greater"] is None
